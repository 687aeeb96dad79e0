/* cli_flags.c — every command's flags (cli.h): one table per command,
 * used by cli_main.c's command table and by the tests that build a
 * submission the way the CLI does. */
#include <stddef.h>

#include "cli.h"

#define END          \
    {                \
        .name = NULL \
    } /* ends a flag table */
/* flags several job-file commands take alike (submit, run, worker); macros,
 * not const objects, which only GCC takes as initializers */
#define F_JOB_NP                                            \
    {                                                       \
        .name = "--np", .kind = CLI_VALUE, .metavar = "N",  \
        .help = "number of ranks (the job file's [job] np)" \
    }
#define F_SET                                                              \
    {                                                                      \
        .name = "--set", .kind = CLI_LIST, .metavar = "SECTION.KEY=VALUE", \
        .help = "override a key of the job file"                           \
    }
#define F_JSON                                                                       \
    {                                                                                \
        .name = "--json", .kind = CLI_SWITCH, .help = "print the coordinator's JSON" \
    }

const cli_flag CLI_SUBMIT_FLAGS[] = {
    F_JOB_NP,
    F_SET,
    {.name = "--follow",
     .kind = CLI_SWITCH,
     .help = "show the job's progress or output until it ends (Ctrl-C detaches)",
     .alias = "-f"},
    {.name = "--json", .kind = CLI_SWITCH, .help = "print the coordinator's answer as JSON"},
    END};
const cli_flag CLI_RUN_FLAGS[] = {
    F_JOB_NP,
    F_SET,
    {.name = "--keep",
     .kind = CLI_SWITCH,
     .help = "keep the temporary cluster's folder (logs) after success"},
    END};
const cli_flag CLI_WORKER_FLAGS[] = {F_SET, END};
const cli_flag CLI_EXEC_FLAGS[] = {
    {.name = "--np", .kind = CLI_VALUE, .metavar = "N", .help = "number of ranks"},
    {.name = "--local",
     .kind = CLI_SWITCH,
     .help = "on this machine: a coordinator and an agent just for it"},
    {.name = "--name", .kind = CLI_VALUE, .metavar = "NAME", .help = "a name for listings"},
    {.name = "--max-restarts",
     .kind = CLI_VALUE,
     .metavar = "K",
     .help = "restarts after a failure"},
    {.name = "--min-np", .kind = CLI_VALUE, .metavar = "M", .help = "restart on as few as M ranks"},
    {.name = "--env",
     .kind = CLI_LIST,
     .metavar = "NAME[=VALUE]",
     .help =
         "an environment variable for every rank (NAME alone: its value here, as horovodrun -x)",
     .alias = "-x"},
    {.name = "--chdir",
     .kind = CLI_VALUE,
     .metavar = "DIR",
     .help = "the ranks' working folder (default: this one; relative to it, as srun --chdir)"},
    {.name = "--no-default-env",
     .kind = CLI_SWITCH,
     .help = "do not pass PATH, PYTHONPATH and VIRTUAL_ENV from here"},
    {.name = "--transport",
     .kind = CLI_VALUE,
     .metavar = "tcp|rdma|nccl|shm|auto",
     .help = "the data plane (default tcp)"},
    {.name = "--sockets",
     .kind = CLI_VALUE,
     .metavar = "N",
     .help = "TCP connections to the right ring neighbour"},
    {.name = "--priority", .kind = CLI_VALUE, .metavar = "P", .help = "queue order (higher first)"},
    {.name = "--queue-timeout",
     .kind = CLI_VALUE,
     .metavar = "DURATION",
     .help = "longest wait in the queue (default: none)"},
    {.name = "--deadline", .kind = CLI_VALUE, .metavar = "DURATION", .help = "longest run time"},
    {.name = "--collective-timeout",
     .kind = CLI_VALUE,
     .metavar = "DURATION",
     .help = "deadline of every collective"},
    {.name = "--memory-limit",
     .kind = CLI_VALUE,
     .metavar = "SIZE",
     .help = "per rank: most memory it and what it starts may use (as srun --mem)"},
    {.name = "--disk-limit",
     .kind = CLI_VALUE,
     .metavar = "SIZE",
     .help = "per node: most the job's files may take there (its work folder, its /tmp)"},
    {.name = "--cpu-limit",
     .kind = CLI_VALUE,
     .metavar = "CPUS",
     .help = "per rank: CPUs' worth of time (1.5: one and a half cores)"},
    {.name = "--encrypt", .kind = CLI_SWITCH, .help = "AES-256-GCM on the data plane"},
    {.name = "--no-integrity",
     .kind = CLI_SWITCH,
     .help = "plain data-plane frames, no per-frame MAC (trusted networks)"},
    {.name = "--flat",
     .kind = CLI_SWITCH,
     .help = "one ring of all ranks, no hierarchical allreduce"},
    {.name = "--keep", .kind = CLI_SWITCH, .help = "with --local: keep the cluster's folder"},
    {.name = "--json", .kind = CLI_SWITCH, .help = "print the coordinator's answer as JSON"},
    END};
const cli_flag CLI_JOBS_FLAGS[] = {
    {.name = "--state", .kind = CLI_VALUE, .metavar = "STATE", .help = "only jobs in this state"},
    {.name = "--user", .kind = CLI_VALUE, .metavar = "USER", .help = "only this user's jobs"},
    {.name = "--since",
     .kind = CLI_VALUE,
     .metavar = "WHEN",
     .help = "submitted since (2h, 3d, 2026-11-24)"},
    {.name = "--limit",
     .kind = CLI_VALUE,
     .metavar = "N",
     .help = "at most N jobs, newest first (default 100)"},
    {.name = "--before",
     .kind = CLI_VALUE,
     .metavar = "ID",
     .help = "jobs older than job ID (the next page)"},
    F_JSON,
    END};
const cli_flag CLI_JSON_FLAGS[] = {F_JSON, END};
const cli_flag CLI_TRACE_FLAGS[] = {
    {.name = "--out", .kind = CLI_VALUE, .metavar = "FILE", .help = "the merged Chrome trace JSON"},
    {.name = "--rank", .kind = CLI_VALUE, .metavar = "R", .help = "only rank R"},
    END};
const cli_flag CLI_MODEL_FLAGS[] = {
    {.name = "--tensors", .kind = CLI_SWITCH, .help = "also every parameter tensor with its shape"},
    END};
const cli_flag CLI_TOKEN_FLAGS[] = {
    {.name = "--role",
     .kind = CLI_VALUE,
     .metavar = "metrics|read|submit|admin|agent",
     .help =
         "create: what the token may do (agent: one agent's own registration token, for its name)"},
    {.name = "--unix-user",
     .kind = CLI_VALUE,
     .metavar = "USER",
     .help =
         "create: the jobs it submits run as this Unix user on the agents (role submit or admin)"},
    F_JSON,
    END};
const cli_flag CLI_STATUS_FLAGS[] = {{.name = "--results",
                                      .kind = CLI_SWITCH,
                                      .help = "only each rank's reported result (\"R: JSON\")"},
                                     F_JSON,
                                     END};
const cli_flag CLI_LOGS_FLAGS[] = {
    {.name = "--rank",
     .kind = CLI_VALUE,
     .metavar = "R",
     .help = "only rank R (default: every rank, lines led by [rank])"},
    {.name = "--attempt",
     .kind = CLI_VALUE,
     .metavar = "N",
     .help = "attempt N's output (default: the latest attempt's)"},
    {.name = "--follow",
     .kind = CLI_SWITCH,
     .help = "keep following until the ranks have exited",
     .alias = "-f"},
    {.name = "--raw",
     .kind = CLI_SWITCH,
     .help = "the output as the ranks wrote it, control characters too (escaped on a terminal)"},
    END};
const cli_flag CLI_INIT_FLAGS[] = {
    {.name = "--san",
     .kind = CLI_LIST,
     .metavar = "HOSTNAME-OR-IP",
     .help = "a name the coordinator's certificate holds"},
    {.name = "--force", .kind = CLI_SWITCH, .help = "overwrite existing material"},
    END};
const cli_flag CLI_PREP_FLAGS[] = {
    {.name = "--input",
     .kind = CLI_VALUE,
     .metavar = "DIR",
     .help = "folder of *.csv, *.tsv (either .gz), *.parquet files and Parquet folders, one table "
             "each"},
    {.name = "--sql", .kind = CLI_VALUE, .metavar = "FILE", .help = "the feature SQL script"},
    {.name = "--from",
     .kind = CLI_VALUE,
     .metavar = "PATH",
     .help = "instead of --input/--sql: one table (a .csv/.tsv (.gz) or Parquet file, or a Spark "
             "folder of either) whose columns prep infers; it writes the script it ran as "
             "OUT/prep.sql, and OUT/score.sql for new rows (predict --input NEW --sql)"},
    {.name = "--from-parquet", .kind = CLI_VALUE, .metavar = "PATH", .help = "the same as --from"},
    {.name = "--test",
     .kind = CLI_VALUE,
     .metavar = "PATH",
     .help = "with --from: the rows to predict, a file of their own"},
    {.name = "--test-column",
     .kind = CLI_VALUE,
     .metavar = "COL",
     .help = "with --from: rows whose COL is 1/true/yes are the rows to predict (held out)"},
    {.name = "--job",
     .kind = CLI_VALUE,
     .metavar = "FILE",
     .help = "with --from: take label, categorical, continuous, validation from its [data]"},
    {.name = "--label",
     .kind = CLI_VALUE,
     .metavar = "COL",
     .help = "with --from: the target column"},
    {.name = "--categorical",
     .kind = CLI_VALUE,
     .metavar = "COLS",
     .help = "with --from: comma-separated categorical columns"},
    {.name = "--continuous",
     .kind = CLI_VALUE,
     .metavar = "COLS",
     .help = "with --from: comma-separated numeric columns"},
    {.name = "--drop",
     .kind = CLI_VALUE,
     .metavar = "COLS",
     .help = "with --from: comma-separated columns left out"},
    {.name = "--validation",
     .kind = CLI_VALUE,
     .metavar = "FRACTION",
     .help = "with --from: the training rows held out for validation, stratified by class "
             "(default 0.2; 0: none)"},
    {.name = "--fold",
     .kind = CLI_VALUE,
     .metavar = "K/F",
     .help = "the validation rows are fold K (0 to F-1) of F cross-validation folds of the "
             "training rows, stratified by class (with --sql: instead of the script's own "
             "validation column); F jobs, one per fold, then `ringtrain ensemble --bag`"},
    {.name = "--validation-column",
     .kind = CLI_VALUE,
     .metavar = "COL",
     .help = "with --from: the 0/1 column marking validation rows instead"},
    {.name = "--seed",
     .kind = CLI_VALUE,
     .metavar = "N",
     .help = "the seed of --fold's folds and --from's validation split (default 0)"},
    {.name = "--positive-class",
     .kind = CLI_VALUE,
     .metavar = "NAME",
     .help = "binary tasks: the class the model scores (default: the minority class)"},
    {.name = "--lenient",
     .kind = CLI_SWITCH,
     .help = "text in a continuous column is missing (counted per column), not an error"},
    {.name = "--id",
     .kind = CLI_VALUE,
     .metavar = "COL",
     .help = "with --from: the test rows' id column"},
    {.name = "--date",
     .kind = CLI_VALUE,
     .metavar = "COLS",
     .help = "with --from: date columns (YYYY-MM-DD, or M/D/YYYY, D.M.YYYY, ... as their values "
             "tell): expanded into year, month, day, weekday and days, the first also kept as "
             "the dataset's date"},
    {.name = "--label-transform",
     .kind = CLI_VALUE,
     .metavar = "none|log|standardize|log,standardize",
     .help = "with --from: log: the label holds log(target); standardize: the trainer fits (y - "
             "mean) / std (a regression's default); both: the log first"},
    {.name = "--task",
     .kind = CLI_VALUE,
     .metavar = "regression|binary|multiclass",
     .help = "with --from: the task (default: inferred from the label)"},
    {.name = "--weight",
     .kind = CLI_VALUE,
     .metavar = "COL",
     .help = "with --from: a sample-weight column"},
    {.name = "--max-label",
     .kind = CLI_VALUE,
     .metavar = "X",
     .help = "with --from: the largest raw target (default: the label's largest)"},
    {.name = "--out", .kind = CLI_VALUE, .metavar = "DIR", .help = "the dataset folder to write"},
    {.name = "--partitions",
     .kind = CLI_VALUE,
     .metavar = "N",
     .help = "training partitions (default 1)"},
    {.name = "--skip-bad-rows",
     .kind = CLI_SWITCH,
     .help = "drop and count malformed rows instead of stopping"},
    {.name = "--keep-db",
     .kind = CLI_VALUE,
     .metavar = "FILE",
     .help = "keep the SQLite database the SQL ran in"},
    {.name = "--db",
     .kind = CLI_VALUE,
     .metavar = "auto|memory|disk",
     .help = "where SQLite works (auto: on disk when the inputs are large)"},
    {.name = "--rows-per-group",
     .kind = CLI_VALUE,
     .metavar = "N",
     .help = "rows per shard row group"},
    {.name = "--quiet", .kind = CLI_SWITCH, .help = "no progress lines"},
    END};
const cli_flag CLI_PREDICT_FLAGS[] = {
    {.name = "--model",
     .kind = CLI_VALUE,
     .metavar = "CKPT",
     .help = "the checkpoint, or an ensemble (`ringtrain ensemble`'s folder or its "
             "ensemble.json)"},
    {.name = "--dataset",
     .kind = CLI_VALUE,
     .metavar = "DIR",
     .help = "the prepared dataset with the test rows"},
    {.name = "--input",
     .kind = CLI_VALUE,
     .metavar = "PATH",
     .help = "instead of --dataset: new raw data (with --sql a folder of tables, or one file "
             "as table input; else one CSV/Parquet file or folder of the model's columns)"},
    {.name = "--sql",
     .kind = CLI_VALUE,
     .metavar = "FILE",
     .help = "with --input: the training's feature script (its test_table is scored), or "
             "DATASET/score.sql of a prep --from dataset (new rows, no label needed)"},
    {.name = "--id",
     .kind = CLI_VALUE,
     .metavar = "COL",
     .help = "with --input: the column identifying each row in the output"},
    {.name = "--keep",
     .kind = CLI_VALUE,
     .metavar = "COLS",
     .help = "with --input: columns carried into the output"},
    {.name = "--proba",
     .kind = CLI_VALUE,
     .metavar = "true|false",
     .help = "classification: a probability column per class after the class (default true)"},
    {.name = "--range-factor",
     .kind = CLI_VALUE,
     .metavar = "F",
     .help = "regression: name predictions past the training targets' range by more than "
             "(F - 1) times its width (default 10; 0: no check)"},
    {.name = "--clip",
     .kind = CLI_SWITCH,
     .help = "regression: write such predictions as the bound they passed"},
    {.name = "--out", .kind = CLI_VALUE, .metavar = "FILE", .help = "the CSV to write"},
    {.name = "--threads",
     .kind = CLI_VALUE,
     .metavar = "N",
     .help = "CPU threads (default: all cores)"},
    {.name = "--batch", .kind = CLI_VALUE, .metavar = "N", .help = "rows per forward pass"},
    END};
const cli_flag CLI_ENSEMBLE_FLAGS[] = {
    {.name = "--out",
     .kind = CLI_VALUE,
     .metavar = "DIR",
     .help = "where submission.csv, validation_predictions.csv and ensemble.json go (a folder "
             "or an s3:// prefix)"},
    {.name = "--metric",
     .kind = CLI_VALUE,
     .metavar = "M",
     .help = "what the weights are chosen by on the validation rows: log_loss (classification's "
             "default), accuracy, auc (two classes), rmse (regression's default), mae, rmse_log"},
    {.name = "--rounds",
     .kind = CLI_VALUE,
     .metavar = "N",
     .help = "greedy selection rounds (default 25): a member's weight is its share of the "
             "best-scoring rounds"},
    {.name = "--skip-incomplete",
     .kind = CLI_SWITCH,
     .help = "leave out a store without both prediction files (a sweep's trials that ASHA "
             "stopped) instead of failing"},
    {.name = "--bag",
     .kind = CLI_SWITCH,
     .help = "the stores are the models of cross-validation folds (disjoint validation rows): "
             "average them alike and score the out-of-fold predictions"},
    END};
