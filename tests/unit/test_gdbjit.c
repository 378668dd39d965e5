/* test_gdbjit.c - names from the GDB JIT interface (user/native/gdbjit.c),
 * against ground truth from binutils: a relocatable object built here by cc,
 * its .text moved by objcopy to where a JIT would have loaded it, then
 * registered in a jit_descriptor list in this process's own memory and read
 * back through process_vm_readv, as from a target. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "gdbjit.h"

#define LOADED 0x7f0000001000ull   /* where the "JIT" put .text */

struct entry {
	struct entry *next, *prev;
	const void *addr;
	uint64_t size;
};

static struct {
	uint32_t version, action;
	struct entry *relevant, *first;
} __jit_debug_descriptor_test = { 1, 0, NULL, NULL };

static char dir[64];

static void run(const char *cmd)
{
	if (system(cmd) != 0)
		fail_msg("failed: %s", cmd);
}

/* the object's bytes; *len its size */
static void *build_object(size_t *len)
{
	char cmd[1024], path[128];
	FILE *f;
	void *buf;
	long n;

	snprintf(dir, sizeof(dir), "/tmp/pyperf-gdbjit-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd),
		 "printf 'int kernel_a(int x) { return x * 3; }\\n"
		 "int kernel_b(int x) { return kernel_a(x) + 7; }\\n' > %s/k.c && "
		 "cc -O1 -c %s/k.c -o %s/k.o && "
		 "objcopy --change-section-address .text=%#llx %s/k.o %s/j.o 2>/dev/null",
		 dir, dir, dir, LOADED, dir, dir);
	run(cmd);
	snprintf(path, sizeof(path), "%s/j.o", dir);
	assert_non_null(f = fopen(path, "rb"));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	assert_true(n > 0);
	assert_non_null(buf = malloc((size_t)n));
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* nm's value and size of `name` in the original object */
static void nm_of(const char *name, uint64_t *value, uint64_t *size)
{
	char cmd[256], line[256], sym[128], type;
	unsigned long long v, s;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm -S %s/k.o", dir);
	assert_non_null(p = popen(cmd, "r"));
	*size = 0;
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, "%llx %llx %c %127s", &v, &s, &type, sym) == 4 && !strcmp(sym, name)) {
			*value = v;
			*size = s;
		}
	pclose(p);
	if (!*size)
		fail_msg("nm finds no %s", name);
}

static void expect_named(const struct perfmap *m, const char *name)
{
	uint64_t value, size;
	const struct jit_sym *j;

	nm_of(name, &value, &size);
	for (uint64_t off = 0; off < size; off += size - 1 ? size - 1 : 1) {
		j = perfmap_find(m, LOADED + value + off);
		if (!j || strcmp(j->name, name))
			fail_msg("%#llx: %s, expected %s", (unsigned long long)(LOADED + value + off),
				 j ? j->name : "nothing", name);
		if (size == 1)
			break;
	}
	/* past its end: nothing, or the next function */
	j = perfmap_find(m, LOADED + value + size);
	assert_true(!j || j->start == LOADED + value + size);
}

static void objects_in_the_list_are_named_at_their_load_address(void **state)
{
	struct entry e1 = { 0 }, e2 = { 0 };
	struct perfmap m = { 0 };
	size_t len;
	void *obj = build_object(&len);
	char cmd[128];

	/* two entries, the second a copy: both read, the list followed */
	e1.addr = obj;
	e1.size = len;
	e1.next = &e2;
	e2.prev = &e1;
	e2.addr = obj;
	e2.size = len;
	__jit_debug_descriptor_test.first = &e1;
	assert_int_equal(gdbjit_read(getpid(), (uint64_t)(uintptr_t)&__jit_debug_descriptor_test,
				     &m), 2);
	expect_named(&m, "kernel_a");
	expect_named(&m, "kernel_b");
	assert_null(perfmap_find(&m, 0x1000));
	perfmap_free(&m);

	/* a list that loops back on itself ends at GDBJIT_MAX_ENTRIES; an
	 * object over the size bound is skipped; a bad version is refused */
	e2.next = &e1;
	assert_int_equal(gdbjit_read(getpid(), (uint64_t)(uintptr_t)&__jit_debug_descriptor_test,
				     &m), GDBJIT_MAX_ENTRIES);
	perfmap_free(&m);
	e1.size = GDBJIT_MAX_OBJECT + 1ull;
	e2.next = NULL;
	assert_int_equal(gdbjit_read(getpid(), (uint64_t)(uintptr_t)&__jit_debug_descriptor_test,
				     &m), 2);
	expect_named(&m, "kernel_a");
	perfmap_free(&m);
	__jit_debug_descriptor_test.version = 2;
	assert_int_equal(gdbjit_read(getpid(), (uint64_t)(uintptr_t)&__jit_debug_descriptor_test,
				     &m), -1);
	assert_int_equal(gdbjit_read(getpid(), 8, &m), -1);
	free(obj);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	run(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(objects_in_the_list_are_named_at_their_load_address),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
