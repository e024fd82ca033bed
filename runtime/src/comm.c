/*
 * comm.c - kiln_comm_t over MPI, and the collectives of data-parallel steps.
 *
 * MPI is loaded with dlopen when a communicator is opened, so programs that
 * never train across processes neither link nor need it. The ABI spoken is
 * Open MPI's (libmpi.so.40, Debian's): handles are pointers, and the
 * predefined ones (MPI_COMM_WORLD, MPI_FLOAT, MPI_SUM, ...) are the
 * addresses of exported globals. Every call's error code is checked, with
 * MPI_ERRORS_RETURN on the communicator so that a failure is a status, not
 * an abort.
 *
 * A bucket's start packs its tensors into the bucket's staging buffer and
 * starts MPI_Iallreduce (sum) on it; its wait polls MPI_Test until done or
 * the timeout, then unpacks the sums divided by the number of ranks. Open
 * MPI progresses a non-blocking collective only inside MPI calls, so every
 * start and wait also tests the buckets still in flight.
 */
#define _POSIX_C_SOURCE 200809L
#include "comm.h"

#include "error.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void *mpi_handle;

struct kiln_comm {
  void *lib;
  int (*Initialized)(int *);
  int (*Finalized)(int *);
  int (*Init_thread)(int *, char ***, int, int *);
  int (*Finalize)(void);
  int (*Comm_dup)(mpi_handle, mpi_handle *);
  int (*Comm_free)(mpi_handle *);
  int (*Comm_rank)(mpi_handle, int *);
  int (*Comm_size)(mpi_handle, int *);
  int (*Comm_set_errhandler)(mpi_handle, mpi_handle);
  int (*Iallreduce)(const void *, void *, int, mpi_handle, mpi_handle, mpi_handle, mpi_handle *);
  int (*Allreduce)(const void *, void *, int, mpi_handle, mpi_handle, mpi_handle);
  int (*Bcast)(void *, int, mpi_handle, int, mpi_handle);
  int (*Test)(mpi_handle *, int *, void *);
  int (*Error_string)(int, char *, int *);
  mpi_handle world, dt_float, dt_double, dt_byte, op_sum, errors_return;
  mpi_handle comm; /* our duplicate of the application's communicator */
  int rank, size;
  int owns_mpi; /* kiln_comm_open_mpi initialized MPI */
  double timeout;
};

#define MPI_IN_PLACE_VALUE ((void *)1)
#define MPI_THREAD_SERIALIZED_VALUE 2

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* "MPI_Xxx failed: <MPI's message>" into buf. */
static void mpi_message(const kiln_comm_t *c, const char *call, int code, char *buf, size_t size) {
  char text[512];
  int len = 0;
  if (c->Error_string == NULL || c->Error_string(code, text, &len) != 0 || len <= 0 || len >= (int)sizeof text)
    snprintf(text, sizeof text, "error code %d", code);
  else
    text[len] = '\0';
  snprintf(buf, size, "%s failed: %s", call, text);
}

static kiln_status_t mpi_fail(const kiln_comm_t *c, const char *call, int code) {
  char msg[600];
  mpi_message(c, call, code, msg, sizeof msg);
  return kiln_error_set(KILN_STATUS_COMMUNICATION, "%s", msg);
}

static const char *kMpiLibrary = "libmpi.so.40";

kiln_status_t kiln_comm_open_mpi(const void *mpi_comm, kiln_comm_t **out_comm) {
  if (out_comm == NULL)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "out_comm is null");
  *out_comm = NULL;
  kiln_comm_t *c = calloc(1, sizeof *c);
  if (c == NULL)
    return kiln_error_set(KILN_STATUS_OUT_OF_MEMORY, "cannot allocate a communicator");
  /* RTLD_GLOBAL: Open MPI's own plugins resolve libmpi's symbols. */
  c->lib = dlopen(kMpiLibrary, RTLD_NOW | RTLD_GLOBAL);
  if (c->lib == NULL) {
    const char *why = dlerror();
    free(c);
    return kiln_error_set(KILN_STATUS_UNAVAILABLE,
                          "cannot load %s (Open MPI, for data-parallel runs): %s; install Open MPI (Debian: "
                          "openmpi-bin)",
                          kMpiLibrary, why ? why : "unknown reason");
  }
  struct {
    const char *name;
    void **slot;
  } symbols[] = {
      {"MPI_Initialized", (void **)&c->Initialized},
      {"MPI_Finalized", (void **)&c->Finalized},
      {"MPI_Init_thread", (void **)&c->Init_thread},
      {"MPI_Finalize", (void **)&c->Finalize},
      {"MPI_Comm_dup", (void **)&c->Comm_dup},
      {"MPI_Comm_free", (void **)&c->Comm_free},
      {"MPI_Comm_rank", (void **)&c->Comm_rank},
      {"MPI_Comm_size", (void **)&c->Comm_size},
      {"MPI_Comm_set_errhandler", (void **)&c->Comm_set_errhandler},
      {"MPI_Iallreduce", (void **)&c->Iallreduce},
      {"MPI_Allreduce", (void **)&c->Allreduce},
      {"MPI_Bcast", (void **)&c->Bcast},
      {"MPI_Test", (void **)&c->Test},
      {"MPI_Error_string", (void **)&c->Error_string},
      {"ompi_mpi_comm_world", &c->world},
      {"ompi_mpi_float", &c->dt_float},
      {"ompi_mpi_double", &c->dt_double},
      {"ompi_mpi_byte", &c->dt_byte},
      {"ompi_mpi_op_sum", &c->op_sum},
      {"ompi_mpi_errors_return", &c->errors_return},
  };
  for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; ++i) {
    /* POSIX: a data pointer and a function pointer share a representation
     * for dlsym's sake. */
    void *sym = dlsym(c->lib, symbols[i].name);
    if (sym == NULL) {
      dlclose(c->lib);
      free(c);
      return kiln_error_set(KILN_STATUS_UNAVAILABLE, "%s has no '%s': it is not Open MPI's ABI", kMpiLibrary,
                            symbols[i].name);
    }
    memcpy(symbols[i].slot, &sym, sizeof sym);
  }
  int code, flag = 0;
  if ((code = c->Initialized(&flag)) != 0) {
    kiln_status_t st = mpi_fail(c, "MPI_Initialized", code);
    dlclose(c->lib);
    free(c);
    return st;
  }
  if (!flag) {
    if (mpi_comm != NULL) {
      dlclose(c->lib);
      free(c);
      return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "an MPI_Comm was given but MPI is not initialized");
    }
    int provided = 0;
    if ((code = c->Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED_VALUE, &provided)) != 0) {
      kiln_status_t st = mpi_fail(c, "MPI_Init_thread", code);
      dlclose(c->lib);
      free(c);
      return st;
    }
    c->owns_mpi = 1;
  }
  mpi_handle base = mpi_comm != NULL ? *(const mpi_handle *)mpi_comm : c->world;
  const char *call = "MPI_Comm_dup";
  if ((code = c->Comm_dup(base, &c->comm)) != 0 ||
      (call = "MPI_Comm_set_errhandler", code = c->Comm_set_errhandler(c->comm, c->errors_return)) != 0 ||
      (call = "MPI_Comm_rank", code = c->Comm_rank(c->comm, &c->rank)) != 0 ||
      (call = "MPI_Comm_size", code = c->Comm_size(c->comm, &c->size)) != 0) {
    kiln_status_t st = mpi_fail(c, call, code);
    kiln_comm_close(c);
    return st;
  }
  c->timeout = 600.0;
  *out_comm = c;
  kiln_error_clear();
  return KILN_STATUS_OK;
}

int kiln_comm_rank(const kiln_comm_t *comm) { return comm ? comm->rank : 0; }
int kiln_comm_size(const kiln_comm_t *comm) { return comm ? comm->size : 1; }
double kiln_comm_timeout(const kiln_comm_t *comm) { return comm ? comm->timeout : 600.0; }

kiln_status_t kiln_comm_set_timeout(kiln_comm_t *comm, double seconds) {
  if (comm == NULL)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "comm is null");
  if (!(seconds >= 0.0))
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "timeout must be >= 0 seconds, found %g", seconds);
  comm->timeout = seconds;
  kiln_error_clear();
  return KILN_STATUS_OK;
}

/* Polls until *request completes or the deadline (0: none) passes. */
static int wait_request(kiln_comm_t *c, mpi_handle *request, double deadline, int *timed_out) {
  *timed_out = 0;
  for (unsigned spins = 0;; ++spins) {
    int done = 0, code = c->Test(request, &done, NULL);
    if (code != 0 || done)
      return code;
    if (deadline > 0 && now_seconds() > deadline) {
      *timed_out = 1;
      return 0;
    }
    if (spins > 1000) {
      struct timespec pause = {0, 20000}; /* 20 us: let another rank run */
      nanosleep(&pause, NULL);
    }
  }
}

kiln_status_t kiln_comm_allreduce_mean(kiln_comm_t *comm, void *data, size_t count, kiln_dtype_t dtype) {
  if (comm == NULL || (data == NULL && count > 0))
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "comm or data is null");
  if (dtype != KILN_DTYPE_F32 && dtype != KILN_DTYPE_F64)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "expected dtype f32 or f64, found %s", kiln_dtype_name(dtype));
  if (count > INT_MAX)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "%zu values exceed MPI's count limit", count);
  int code = comm->Allreduce(MPI_IN_PLACE_VALUE, data, (int)count,
                             dtype == KILN_DTYPE_F64 ? comm->dt_double : comm->dt_float, comm->op_sum, comm->comm);
  if (code != 0)
    return mpi_fail(comm, "MPI_Allreduce", code);
  for (size_t i = 0; i < count; ++i) {
    if (dtype == KILN_DTYPE_F64)
      ((double *)data)[i] /= comm->size;
    else
      ((float *)data)[i] /= (float)comm->size;
  }
  kiln_error_clear();
  return KILN_STATUS_OK;
}

kiln_status_t kiln_comm_broadcast(kiln_comm_t *comm, void *data, size_t bytes, int root) {
  if (comm == NULL || (data == NULL && bytes > 0))
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "comm or data is null");
  if (root < 0 || root >= comm->size)
    return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT, "root %d is not a rank of %d", root, comm->size);
  for (size_t done = 0; done < bytes;) {
    size_t n = bytes - done < (size_t)INT_MAX ? bytes - done : (size_t)INT_MAX;
    int code = comm->Bcast((char *)data + done, (int)n, comm->dt_byte, root, comm->comm);
    if (code != 0)
      return mpi_fail(comm, "MPI_Bcast", code);
    done += n;
  }
  kiln_error_clear();
  return KILN_STATUS_OK;
}

void kiln_comm_close(kiln_comm_t *comm) {
  if (comm == NULL)
    return;
  int finalized = 0;
  if (comm->comm != NULL && comm->Finalized(&finalized) == 0 && !finalized)
    comm->Comm_free(&comm->comm);
  if (comm->owns_mpi && comm->Finalized(&finalized) == 0 && !finalized)
    comm->Finalize();
  /* libmpi stays loaded: Open MPI does not support being unloaded and
   * loaded again in one process. */
  free(comm);
}

/* ---- the collectives of a data-parallel step ------------------------------ */

typedef struct bucket {
  kiln_dtype_t dtype;
  size_t num_tensors, first; /* in dp->elements */
  size_t count;              /* elements in all */
  void *staging;
  mpi_handle request;
  int in_flight;
  double started;
} bucket_t;

struct kiln_dp {
  kiln_comm_t *comm;
  size_t num_buckets;
  bucket_t *buckets;
  uint64_t *elements;
  kiln_status_t status;
  char error[640];
  double blocked, in_flight;
  size_t num_in_flight; /* buckets started, not yet complete */
};

void kiln_dp_progress(kiln_dp_t *dp);

kiln_status_t kiln_dp_create(kiln_comm_t *comm, const kiln_desc_model_t *desc, kiln_dp_t **out) {
  *out = NULL;
  kiln_dp_t *dp = calloc(1, sizeof *dp);
  if (dp == NULL)
    return kiln_error_set(KILN_STATUS_OUT_OF_MEMORY, "cannot allocate the data-parallel state");
  dp->comm = comm;
  dp->num_buckets = desc->num_buckets;
  dp->buckets = calloc(desc->num_buckets, sizeof *dp->buckets);
  dp->elements = calloc(desc->num_bucket_elements ? desc->num_bucket_elements : 1, sizeof *dp->elements);
  if (dp->buckets == NULL || dp->elements == NULL) {
    kiln_dp_destroy(dp);
    return kiln_error_set(KILN_STATUS_OUT_OF_MEMORY, "cannot allocate the data-parallel state");
  }
  for (size_t i = 0; i < desc->num_bucket_elements; ++i)
    dp->elements[i] = kiln_desc_bucket_elements(desc, i);
  for (size_t b = 0; b < dp->num_buckets; ++b) {
    kiln_desc_bucket_t d = kiln_desc_bucket(desc, b);
    bucket_t *bucket = &dp->buckets[b];
    bucket->dtype = d.dtype;
    bucket->num_tensors = d.num_tensors;
    bucket->first = d.first;
    for (size_t i = 0; i < d.num_tensors; ++i)
      bucket->count += dp->elements[d.first + i]; /* the reader bounded the bytes */
    if (bucket->count > INT_MAX) {
      kiln_dp_destroy(dp);
      return kiln_error_set(KILN_STATUS_INVALID_ARGUMENT,
                            "bucket %zu holds %zu values, more than one MPI call takes; compile with a smaller "
                            "--bucket-bytes",
                            b, bucket->count);
    }
    bucket->staging = malloc(bucket->count * kiln_dtype_size(bucket->dtype));
    if (bucket->staging == NULL) {
      kiln_dp_destroy(dp);
      return kiln_error_set(KILN_STATUS_OUT_OF_MEMORY, "cannot allocate bucket %zu's %zu values", b, bucket->count);
    }
  }
  *out = dp;
  return KILN_STATUS_OK;
}

void kiln_dp_destroy(kiln_dp_t *dp) {
  if (dp == NULL)
    return;
  for (size_t b = 0; dp->buckets != NULL && b < dp->num_buckets; ++b)
    free(dp->buckets[b].staging);
  free(dp->buckets);
  free(dp->elements);
  free(dp);
}

static void dp_fail(kiln_dp_t *dp, const char *detail, uint32_t index) {
  if (dp->status != KILN_STATUS_OK)
    return; /* the first error is the one to report */
  dp->status = KILN_STATUS_COMMUNICATION;
  snprintf(dp->error, sizeof dp->error, "all-reduce of bucket %u: %s", (unsigned)index, detail);
}

/* Lets MPI progress the buckets in flight (Open MPI has no progress thread
 * by default). */
static void dp_progress(kiln_dp_t *dp) {
  if (dp->num_in_flight == 0)
    return;
  for (size_t b = 0; b < dp->num_buckets; ++b)
    if (dp->buckets[b].in_flight) {
      int done = 0;
      if (dp->buckets[b].in_flight == 1 && dp->comm->Test(&dp->buckets[b].request, &done, NULL) == 0 && done) {
        dp->buckets[b].in_flight = 2; /* complete, not yet unpacked */
        --dp->num_in_flight;
      }
    }
}

static void dp_start(void *ctx, uint32_t index, void *const *buffers) {
  kiln_dp_t *dp = ctx;
  if (dp->status != KILN_STATUS_OK || index >= dp->num_buckets) {
    dp_fail(dp, "bucket index out of range", index);
    return;
  }
  bucket_t *bucket = &dp->buckets[index];
  size_t width = kiln_dtype_size(bucket->dtype), at = 0;
  for (size_t i = 0; i < bucket->num_tensors; ++i) {
    size_t bytes = (size_t)dp->elements[bucket->first + i] * width;
    memcpy((char *)bucket->staging + at, buffers[i], bytes);
    at += bytes;
  }
  kiln_comm_t *c = dp->comm;
  bucket->started = now_seconds();
  int code =
      c->Iallreduce(MPI_IN_PLACE_VALUE, bucket->staging, (int)bucket->count,
                    bucket->dtype == KILN_DTYPE_F64 ? c->dt_double : c->dt_float, c->op_sum, c->comm, &bucket->request);
  if (code != 0) {
    char msg[600];
    mpi_message(c, "MPI_Iallreduce", code, msg, sizeof msg);
    {
      dp_fail(dp, msg, index);
      return;
    }
  }
  bucket->in_flight = 1;
  ++dp->num_in_flight;
  dp_progress(dp);
}

static void dp_wait(void *ctx, uint32_t index, void *const *buffers) {
  kiln_dp_t *dp = ctx;
  if (dp->status != KILN_STATUS_OK || index >= dp->num_buckets || !dp->buckets[index].in_flight) {
    dp_fail(dp, "waited for without a start", index);
    return;
  }
  bucket_t *bucket = &dp->buckets[index];
  kiln_comm_t *c = dp->comm;
  double begin = now_seconds();
  if (bucket->in_flight == 1) {
    int timed_out = 0;
    int code = wait_request(c, &bucket->request, c->timeout > 0 ? begin + c->timeout : 0, &timed_out);
    if (code != 0) {
      char msg[600];
      mpi_message(c, "MPI_Test", code, msg, sizeof msg);
      {
        dp_fail(dp, msg, index);
        return;
      }
    }
    if (timed_out) {
      char msg[128];
      snprintf(msg, sizeof msg, "timed out after %g s (a rank failed or stopped calling)", c->timeout);
      {
        dp_fail(dp, msg, index);
        return;
      }
    }
  }
  double end = now_seconds();
  if (bucket->in_flight == 1)
    --dp->num_in_flight;
  bucket->in_flight = 0;
  dp->blocked += end - begin;
  dp->in_flight += end - bucket->started;
  size_t width = kiln_dtype_size(bucket->dtype), at = 0;
  for (size_t i = 0; i < bucket->num_tensors; ++i) {
    size_t n = (size_t)dp->elements[bucket->first + i];
    if (bucket->dtype == KILN_DTYPE_F64) {
      const double *sum = (const double *)((char *)bucket->staging + at);
      double *out = buffers[i];
      for (size_t k = 0; k < n; ++k)
        out[k] = sum[k] / c->size;
    } else {
      const float *sum = (const float *)((char *)bucket->staging + at);
      float *out = buffers[i];
      for (size_t k = 0; k < n; ++k)
        out[k] = sum[k] / (float)c->size;
    }
    at += n * width;
  }
  dp_progress(dp);
}

static int32_t dp_finish(void *ctx) {
  kiln_dp_t *dp = ctx;
  for (size_t b = 0; b < dp->num_buckets; ++b)
    if (dp->buckets[b].in_flight == 2) /* completed but never waited for */
      dp->buckets[b].in_flight = 0;
  return (int32_t)dp->status;
}

void kiln_dp_progress(kiln_dp_t *dp) { dp_progress(dp); }

void kiln_dp_begin(kiln_dp_t *dp, kiln_collectives_t *out) {
  dp->num_in_flight = 0;
  for (size_t b = 0; b < dp->num_buckets; ++b)
    dp->num_in_flight += dp->buckets[b].in_flight == 1;
  dp->status = KILN_STATUS_OK;
  dp->error[0] = '\0';
  dp->blocked = dp->in_flight = 0;
  out->start = dp_start;
  out->wait = dp_wait;
  out->finish = dp_finish;
  out->ctx = dp;
}

const char *kiln_dp_error(const kiln_dp_t *dp) { return dp->error; }

void kiln_dp_times(const kiln_dp_t *dp, double *blocked, double *in_flight) {
  *blocked = dp->blocked;
  *in_flight = dp->in_flight;
}
