/*
 * comm.h - data-parallel runs: the per-model state behind the collectives a
 * data-parallel step calls (kiln_collectives_t), over a kiln_comm_t.
 * Internal to the runtime.
 */
#ifndef KILN_RUNTIME_COMM_H
#define KILN_RUNTIME_COMM_H

#include "kiln/runtime.h"

#include "descriptor.h"

typedef struct kiln_dp kiln_dp_t;

/* One staging buffer per bucket of `desc`, reduced over `comm`. */
KILN_INTERNAL kiln_status_t kiln_dp_create(kiln_comm_t *comm, const kiln_desc_model_t *desc, kiln_dp_t **out);
KILN_INTERNAL void kiln_dp_destroy(kiln_dp_t *dp);
/* The collectives for one run; clears the last run's error and times. */
KILN_INTERNAL void kiln_dp_begin(kiln_dp_t *dp, kiln_collectives_t *out);
/* Lets MPI progress the buckets in flight; cheap when none is (the
 * runtime calls it between kernels). */
KILN_INTERNAL void kiln_dp_progress(kiln_dp_t *dp);
/* The message of the run's failure (after finish returned nonzero). */
KILN_INTERNAL const char *kiln_dp_error(const kiln_dp_t *dp);
KILN_INTERNAL void kiln_dp_times(const kiln_dp_t *dp, double *blocked, double *in_flight);

#endif /* KILN_RUNTIME_COMM_H */
