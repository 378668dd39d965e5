/* version.h - the release, as `pyperf-bpf --version` prints it and the
 * outputs that name their producer (OTLP's instrumentation scope) carry it. */
#ifndef PYPERF_VERSION_H
#define PYPERF_VERSION_H

#define PYPERF_VERSION "0.1.0"

#endif
