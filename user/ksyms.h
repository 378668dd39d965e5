/* ksyms.h - kernel symbol names for kernel stack addresses (/proc/kallsyms). */
#ifndef PYPERF_KSYMS_H
#define PYPERF_KSYMS_H

#include <stddef.h>
#include <stdint.h>

struct ksym {
	uint64_t addr;
	char *name;
};

struct ksyms {
	struct ksym *v;
	size_t n;
};

/* Load text symbols from path (normally /proc/kallsyms); 0 or -1. */
int ksyms_load(struct ksyms *k, const char *path);
/* Name of the function containing addr, or NULL if below every symbol. */
const char *ksyms_name(const struct ksyms *k, uint64_t addr);
void ksyms_free(struct ksyms *k);

#endif
