/* rt_tmp.h — paths a process makes for its own use (the CLI's staging
 * folders in TMPDIR, prep's database on disk), removed if SIGINT, SIGTERM
 * or SIGHUP ends the process before it removes them itself.
 *
 * The first rt_tmp_track installs a handler for the three signals (unless
 * the signal is ignored, as under nohup); it removes every tracked path with
 * async-signal-safe calls only (openat, getdents64, unlinkat), then puts the
 * signal's default back and raises it again, so the process still dies of
 * that signal (exit status 128 + N in a shell).  (Model: git's tempfile.c
 * and sigchain.c.)  A handler installed later for one of the signals (the
 * CLI's while it follows a job's logs) replaces this one. */
#ifndef RT_TMP_H
#define RT_TMP_H

#define RT_TMP_SLOTS 8

/* Track path (a file, or a folder removed with all it holds); the slot to
 * give rt_tmp_untrack, or -1 when every slot is taken or the path is too
 * long (it is then not tracked: the process still works, a signal leaves
 * the path behind). */
int rt_tmp_track(const char *path);
/* Stop tracking a slot (before removing the path, or keeping it); -1 is
 * ignored. */
void rt_tmp_untrack(int slot);

#endif
