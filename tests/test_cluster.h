/* test_cluster.h — what the files of the test_cluster binary share: the one
 * cluster (coordinator + agents a1, a2 on host A and b1 on host B) that all
 * its tests run on (test_cluster.c sets it up). */
#ifndef RT_TEST_CLUSTER_H
#define RT_TEST_CLUSTER_H

#include <stdbool.h>

#include "cluster_harness.h"

extern cluster C;
extern bool failed_once;

/* Fails the test and keeps the cluster's files and logs for a look. */
#define CHECK(cond) CL_CHECK(&failed_once, cond)

/* The number of jobs the coordinator lists. */
int njobs(void);
/* Whether agent 0's log says its ranks get cgroups of their own. */
bool agent_has_cgroups(void);

void test_launcher_env(void **state);
void test_escaped_process(void **state);
void test_escaped_process_no_env(void **state);
void test_shm_leftovers(void **state);
void test_progress_flood(void **state);
void test_logs_of_attempts(void **state);
void test_results(void **state);
void test_python_binding(void **state);
void test_tokens_and_roles(void **state);
void test_exec_program_path(void **state);
void test_exec_chdir(void **state);
void test_job_file_reaches_rank(void **state);
void test_rank_usage(void **state); /* test_cluster_usage.c */
void test_gpu_usage(void **state);
void test_job_limits(void **state);
void test_escaped_usage(void **state);
void test_hostile_clients(void **state); /* test_cluster_hostile.c */

#endif
