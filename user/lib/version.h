/* version.h - the release, in its one place: `pyperf-bpf --version` prints
 * it, scripts/version reads it for the .deb and the wheel, and the
 * outputs that name their producer (OTLP's instrumentation scope) carry it. */
#ifndef PYPERF_VERSION_H
#define PYPERF_VERSION_H

#define PYPERF_VERSION "0.1.0"

#endif
