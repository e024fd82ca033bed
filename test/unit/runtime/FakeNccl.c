/*
 * FakeNccl.c - a stand-in for libnccl.so.2 for the CUDA runtime's
 * data-parallel steps on machines without a GPU (CI has none). It
 * implements the NCCL calls runtime/cuda/runtime_cuda.c makes, puts each
 * all-reduce on the fake driver's stream (logged, and run on host memory,
 * which is the fake's device memory) and writes every call to the fake
 * driver's log. One rank's ncclAvg is its own values. Several ranks
 * (kiln-run under mpirun, which has loaded Open MPI with RTLD_GLOBAL) sum
 * through MPI_Allreduce on MPI_COMM_WORLD, found in the process with dlsym,
 * and divide by the number of ranks: a real average across the processes,
 * as NCCL computes it on GPUs.
 *
 * KILN_FAKE_NCCL_FAIL makes the all-reduces fail as a lost rank does: with
 * "hang" they never complete (the fake driver stalls their stream: its
 * events are never reached), with "remote" they never complete and
 * ncclCommGetAsyncError reports ncclRemoteError. ncclCommAbort is logged.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_DEFAULT */
#endif

#include <cuda.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kiln_fake_cuda_enqueue_work(const char *line, CUstream stream, void (*run)(void *), const void *ctx,
                                 size_t ctx_bytes);
void kiln_fake_cuda_say(const char *line);
void kiln_fake_cuda_stall(CUstream stream);

typedef struct {
  char internal[128];
} ncclUniqueId;
typedef struct fake_comm {
  int nranks, rank;
  int failed; /* an all-reduce was lost (KILN_FAKE_NCCL_FAIL=remote) */
} * ncclComm_t;

enum { SUCCESS = 0, INVALID_ARGUMENT = 4, REMOTE_ERROR = 6, FLOAT32 = 7, FLOAT64 = 8, AVG = 4 };
static const char kId[] = "kiln fake nccl";

int ncclGetUniqueId(ncclUniqueId *id) {
  memset(id, 0, sizeof *id);
  memcpy(id->internal, kId, sizeof kId);
  kiln_fake_cuda_say("nccl unique id");
  return SUCCESS;
}

int ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
  if (memcmp(id.internal, kId, sizeof kId) != 0 || nranks < 1 || rank < 0 || rank >= nranks)
    return INVALID_ARGUMENT;
  *comm = malloc(sizeof **comm);
  if (*comm == NULL)
    return 1;
  (*comm)->nranks = nranks;
  (*comm)->rank = rank;
  (*comm)->failed = 0;
  char line[64];
  snprintf(line, sizeof line, "nccl init rank %d of %d", rank, nranks);
  kiln_fake_cuda_say(line);
  return SUCCESS;
}

int ncclCommDestroy(ncclComm_t comm) {
  free(comm);
  kiln_fake_cuda_say("nccl destroy");
  return SUCCESS;
}

int ncclGroupStart(void) {
  kiln_fake_cuda_say("nccl group start");
  return SUCCESS;
}

int ncclGroupEnd(void) {
  kiln_fake_cuda_say("nccl group end");
  return SUCCESS;
}

const char *ncclGetErrorString(int result) {
  return result == SUCCESS        ? "no error"
         : result == REMOTE_ERROR ? "remote process exited or there was a network error"
                                  : "fake nccl error";
}

int ncclCommGetAsyncError(ncclComm_t comm, int *async_error) {
  if (comm == NULL || async_error == NULL)
    return INVALID_ARGUMENT;
  *async_error = comm->failed ? REMOTE_ERROR : SUCCESS;
  return SUCCESS;
}

int ncclCommAbort(ncclComm_t comm) {
  free(comm);
  kiln_fake_cuda_say("nccl abort");
  return SUCCESS;
}

typedef struct reduce {
  void *data;
  size_t count;
  int type, nranks;
} reduce_t;

static void run_reduce(void *ctx) {
  const reduce_t *r = ctx;
  if (r->nranks == 1)
    return; /* the mean of one rank's values */
  typedef int (*allreduce_fn)(const void *, void *, int, void *, void *, void *);
  allreduce_fn allreduce = (allreduce_fn)dlsym(RTLD_DEFAULT, "MPI_Allreduce");
  void *world = dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world");
  void *type = dlsym(RTLD_DEFAULT, r->type == FLOAT64 ? "ompi_mpi_double" : "ompi_mpi_float");
  void *sum = dlsym(RTLD_DEFAULT, "ompi_mpi_op_sum");
  if (allreduce == NULL || world == NULL || type == NULL || sum == NULL ||
      allreduce((void *)1 /* MPI_IN_PLACE */, r->data, (int)r->count, type, sum, world) != 0) {
    fprintf(stderr, "fake nccl: several ranks need Open MPI in the process\n");
    abort();
  }
  for (size_t i = 0; i < r->count; ++i) {
    if (r->type == FLOAT64)
      ((double *)r->data)[i] /= r->nranks;
    else
      ((float *)r->data)[i] /= (float)r->nranks;
  }
}

int ncclAllReduce(const void *send, void *recv, size_t count, int type, int op, ncclComm_t comm, CUstream stream) {
  if (comm == NULL || (type != FLOAT32 && type != FLOAT64) || op != AVG || count > 0x7fffffff)
    return INVALID_ARGUMENT;
  if (send != recv)
    memmove(recv, send, count * (type == FLOAT64 ? 8 : 4));
  char line[128];
  snprintf(line, sizeof line, "nccl allreduce avg %s %zu", type == FLOAT64 ? "f64" : "f32", count);
  const char *fail = getenv("KILN_FAKE_NCCL_FAIL");
  if (fail != NULL && (strcmp(fail, "hang") == 0 || strcmp(fail, "remote") == 0)) {
    /* A peer that never answers: nothing is reduced, and nothing after
     * this on the stream completes. */
    comm->failed = strcmp(fail, "remote") == 0;
    kiln_fake_cuda_stall(stream);
    kiln_fake_cuda_say(line);
    return SUCCESS;
  }
  reduce_t r = {recv, count, type, comm->nranks};
  kiln_fake_cuda_enqueue_work(line, stream, run_reduce, &r, sizeof r);
  return SUCCESS;
}
