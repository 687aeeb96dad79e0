/* mpi_allreduce.c — baseline for bench/allreduce: Open MPI's MPI_Allreduce,
 * float32 sum, median microseconds per iteration (slowest rank).  Run by
 * bench/run_transport.sh with the TCP BTL on the loopback interface
 * (--mca pml ob1 --mca btl tcp,self), i.e. "Open MPI over TCP", not its
 * shared-memory path.  Not part of the build (needs Debian's openmpi).
 *
 *   mpirun -np N mpi_allreduce --bytes B [--iters K] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    size_t bytes = 0;
    int iters = 0, rank;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--bytes"))
            bytes = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "--iters"))
            iters = atoi(argv[i + 1]);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (bytes < 4) {
        if (rank == 0)
            fprintf(stderr, "usage: mpi_allreduce --bytes B [--iters K]\n");
        MPI_Finalize();
        return 2;
    }
    if (iters <= 0) {
        double est = 20.0 + (double)bytes / 1000.0;
        iters = (int)(1e6 / est);
        iters = iters < 5 ? 5 : (iters > 2000 ? 2000 : iters);
    }
    size_t count = bytes / 4;
    float *buf = malloc(bytes);
    for (size_t i = 0; i < count; i++)
        buf[i] = 1.0f;
    for (int i = 0; i < 3; i++)
        MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double *t = malloc((size_t)iters * sizeof(double));
    for (int i = 0; i < iters; i++) {
        double a = MPI_Wtime();
        MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        t[i] = (MPI_Wtime() - a) * 1e6;
    }
    qsort(t, (size_t)iters, sizeof *t, cmp);
    double med = t[iters / 2], worst;
    MPI_Reduce(&med, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("usec_per_iter=%.2f\n", worst);
    free(buf);
    free(t);
    MPI_Finalize();
    return 0;
}
