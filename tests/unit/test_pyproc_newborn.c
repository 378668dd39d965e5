/* test_pyproc_newborn.c - a process looked at while its dynamic loader maps
 * libpython.  ld.so maps a library whole from its first byte (the first
 * segment's protection), then each later segment over it at its own file
 * offset; until the writable one is in place, _PyRuntime's address shows
 * the file's bytes at the wrong offset (libpython3.13's writable segment
 * is 0x1000 further in memory than in the file).  Read then, 3.13's debug
 * offsets have no cookie: CI once refused a newborn 3.13 for good so.  Here
 * this process maps pyenv's libpython3.13 the same two steps and looks at
 * itself: not Python yet after the first, 3.13 read from its debug offsets
 * after the second. */
#include <elf.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "pyproc.h"
#include "testutil.h"

#ifndef LIBPY313
#define LIBPY313 "/root/.pyenv/versions/3.13.0/lib/libpython3.13.so.1.0"
#endif

#define PAGE 4096ull
#define DOWN(x) ((x) & ~(PAGE - 1))
#define UP(x) DOWN((x) + PAGE - 1)

static void a_libpython_half_mapped_is_not_python_yet_and_is_read_once_whole(void **state)
{
	int fd = open(LIBPY313, O_RDONLY | O_CLOEXEC);
	Elf64_Ehdr eh;
	Elf64_Phdr ph[32], *rw = NULL;
	uint64_t span = 0;
	uint8_t *base, *seg;
	struct pyproc py;
	char err[512];
	enum pyproc_status st;

	(void)state;
	if (fd < 0)
		fail_msg("%s: %s (pyenv's 3.13.0 is expected)", LIBPY313, strerror(errno));
	assert_int_equal(pread(fd, &eh, sizeof(eh), 0), sizeof(eh));
	assert_true(eh.e_phnum <= 32);
	assert_int_equal(pread(fd, ph, eh.e_phnum * sizeof(ph[0]), eh.e_phoff),
			 (ssize_t)(eh.e_phnum * sizeof(ph[0])));
	for (int i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		if (ph[i].p_vaddr + ph[i].p_memsz > span)
			span = ph[i].p_vaddr + ph[i].p_memsz;
		if (ph[i].p_flags & PF_W)
			rw = &ph[i];
	}
	assert_non_null(rw);
	/* what the test is about: the writable segment sits elsewhere in
	 * memory than in the file */
	assert_true(rw->p_vaddr != rw->p_offset);

	/* step 1: the whole span, from the file's start, read-only */
	base = mmap(NULL, UP(span), PROT_READ, MAP_PRIVATE, fd, 0);
	assert_true(base != MAP_FAILED);
	st = pyproc_inspect(getpid(), &py, err, sizeof(err));
	assert_int_equal(st, PYPROC_NOT_PYTHON);
	assert_non_null(strstr(err, "still being mapped"));

	/* step 2: the writable segment over it, from its own offset (its
	 * part past the file's bytes, .bss, is not where _PyRuntime is) */
	seg = mmap(base + DOWN(rw->p_vaddr), UP(rw->p_vaddr + rw->p_filesz) - DOWN(rw->p_vaddr),
		   PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, DOWN(rw->p_offset));
	assert_true(seg != MAP_FAILED);
	st = pyproc_inspect(getpid(), &py, err, sizeof(err));
	if (st != PYPROC_OK)
		fail_msg("after the writable segment: %d: %s", st, err);
	assert_int_equal(py.major, 3);
	assert_int_equal(py.minor, 13);
	assert_true(py.debug_offsets);

	munmap(base, UP(span));
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_libpython_half_mapped_is_not_python_yet_and_is_read_once_whole),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
