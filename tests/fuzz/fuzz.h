/* fuzz.h - helpers shared by the libFuzzer targets in this folder.
 *
 * Several parsers take a file (a path or an fd) rather than bytes: the input
 * goes into an anonymous memory file, which they open as /proc/self/fd/N,
 * so the fuzzer exercises the same code the profiler runs, with no files
 * left behind. */
#ifndef PYPERF_FUZZ_H
#define PYPERF_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A memfd holding data[0..size), its /proc path in path; aborts on failure
 * (the harness, not the parser, is broken then). */
static inline int fuzz_memfd(const uint8_t *data, size_t size, char *path, size_t len)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);

	if (fd < 0)
		abort();
	while (size) {
		ssize_t n = write(fd, data, size);

		if (n <= 0)
			abort();
		data += n;
		size -= (size_t)n;
	}
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return fd;
}

/* A little-endian integer of n bytes taken from the front of the input
 * (zeros past its end). */
static inline uint64_t fuzz_take(const uint8_t **data, size_t *size, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++) {
		if (*size) {
			v |= (uint64_t)**data << (8 * i);
			(*data)++;
			(*size)--;
		}
	}
	return v;
}

/* A property the parser promises did not hold: a crash with a message, so
 * the fuzzer saves the input. */
#define FUZZ_CHECK(cond)                                                          \
	do {                                                                      \
		if (!(cond)) {                                                    \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,    \
				__LINE__, #cond);                                 \
			abort();                                                  \
		}                                                                 \
	} while (0)

#endif
