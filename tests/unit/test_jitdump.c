/* test_jitdump.c - code loads from a jitdump file (user/native/jitdump.c):
 * files built here record by record as the format's writers lay them out
 * (perf's jitdump specification), parsed whole, cut short and in pieces,
 * then read from this process's own mapping of one, as from a target. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "testutil.h"
#include "jitdump.h"

struct file {
	uint8_t b[8192];
	size_t n;
};

static void put(struct file *f, const void *p, size_t n)
{
	assert_true(f->n + n <= sizeof(f->b));
	memcpy(f->b + f->n, p, n);
	f->n += n;
}

static void put32(struct file *f, uint32_t v)
{
	put(f, &v, 4);
}

static void put64(struct file *f, uint64_t v)
{
	put(f, &v, 8);
}

static void header(struct file *f, uint32_t magic, uint32_t size)
{
	put32(f, magic);
	put32(f, 1);       /* version */
	put32(f, size);
	put32(f, 62);      /* EM_X86_64 */
	put32(f, 0);
	put32(f, (uint32_t)getpid());
	put64(f, 123);     /* timestamp */
	put64(f, 0);       /* flags */
	while (f->n < size)
		put32(f, 0);
}

/* a code load: name, then code_size bytes of code */
static size_t load(struct file *f, uint64_t addr, uint64_t size, const char *name)
{
	size_t at = f->n, len = strlen(name) + 1;

	put32(f, 0);
	put32(f, (uint32_t)(16 + 40 + len + size));
	put64(f, 456);
	put32(f, (uint32_t)getpid());
	put32(f, (uint32_t)getpid());
	put64(f, addr);    /* vma */
	put64(f, addr);    /* code_addr */
	put64(f, size);
	put64(f, 7);       /* code_index */
	put(f, name, len);
	for (uint64_t i = 0; i < size; i++)
		put(f, "\xcc", 1);
	return at;
}

static size_t move(struct file *f, uint64_t from, uint64_t to, uint64_t size)
{
	size_t at = f->n;

	put32(f, 1);
	put32(f, 16 + 48);
	put64(f, 789);
	put32(f, 1);
	put32(f, 1);
	put64(f, to);      /* vma */
	put64(f, from);
	put64(f, to);
	put64(f, size);
	put64(f, 7);
	return at;
}

/* a record of a kind that is skipped (debug info, unwinding info, close) */
static size_t other(struct file *f, uint32_t id, uint32_t body)
{
	size_t at = f->n;

	put32(f, id);
	put32(f, 16 + body);
	put64(f, 1);
	for (uint32_t i = 0; i < body; i++)
		put(f, "\x01", 1);
	return at;
}

static const char *name_at(const struct perfmap *m, uint64_t pc)
{
	const struct jit_sym *s = perfmap_find(m, pc);

	return s ? s->name : NULL;
}

static void sample(struct file *f, size_t *beta_at)
{
	header(f, 0x4A695444, 40);
	load(f, 0x1000, 0x20, "alpha");
	other(f, 2, 40);               /* debug info */
	*beta_at = load(f, 0x2000, 0x10, "beta");
	other(f, 4, 24);               /* unwinding info */
	move(f, 0x1000, 0x3000, 0x20);
	other(f, 3, 0);                /* close */
}

static void whole_file(void **state)
{
	struct file f = { .n = 0 };
	struct perfmap m = { 0 };
	uint64_t next;
	size_t beta;

	(void)state;
	sample(&f, &beta);
	assert_int_equal(jitdump_parse(&m, f.b, f.n, 0, f.n, &next), 0);
	assert_int_equal(next, f.n);
	perfmap_sort(&m);
	assert_int_equal(m.n, 3);
	assert_string_equal(name_at(&m, 0x1000), "alpha");
	assert_string_equal(name_at(&m, 0x101f), "alpha");
	assert_null(name_at(&m, 0x1020));
	assert_string_equal(name_at(&m, 0x200f), "beta");
	assert_string_equal(name_at(&m, 0x3010), "alpha"); /* moved there */
	perfmap_free(&m);
}

static void records_are_taken_once_the_file_holds_them(void **state)
{
	struct file f = { .n = 0 };
	struct perfmap m = { 0 };
	uint64_t next;
	size_t beta;

	(void)state;
	sample(&f, &beta);
	/* the file ends inside beta's code: alpha only, go on from beta */
	assert_int_equal(jitdump_parse(&m, f.b, beta + 60, 0, beta + 60, &next), 0);
	assert_int_equal(next, beta);
	assert_int_equal(m.n, 1);
	/* then the rest */
	assert_int_equal(jitdump_parse(&m, f.b + next, f.n - next, next, f.n, &next), 0);
	assert_int_equal(next, f.n);
	assert_int_equal(m.n, 3);
	perfmap_free(&m);
	/* the header alone, or less of it: nothing yet, nothing wrong */
	assert_int_equal(jitdump_parse(&m, f.b, 40, 0, 40, &next), 0);
	assert_int_equal(next, 40);
	assert_int_equal(jitdump_parse(&m, f.b, 20, 0, 20, &next), 0);
	assert_int_equal(next, 0);
	assert_int_equal(m.n, 0);
	/* a read that ends inside beta's code, the file longer: beta is taken
	 * (its name is there), and the next read starts after it */
	assert_int_equal(jitdump_parse(&m, f.b, beta + 16 + 40 + 5 + 3, 0, f.n, &next), 0);
	assert_int_equal(next, beta + 16 + 40 + 5 + 0x10);
	assert_int_equal(m.n, 2);
	perfmap_free(&m);
	/* a read that ends inside beta's name: read again from beta */
	assert_int_equal(jitdump_parse(&m, f.b, beta + 16 + 40 + 2, 0, f.n, &next), 0);
	assert_int_equal(next, beta);
	assert_int_equal(m.n, 1);
	perfmap_free(&m);
}

static void bad_files(void **state)
{
	struct file f = { .n = 0 };
	struct perfmap m = { 0 };
	uint64_t next;
	size_t at;

	(void)state;
	header(&f, 0x4454694A, 40); /* written in the other byte order */
	assert_int_equal(jitdump_parse(&m, f.b, f.n, 0, f.n, &next), -1);
	f.n = 0;
	header(&f, 0x4A695444, 40);
	f.b[4] = 2; /* version 2 */
	assert_int_equal(jitdump_parse(&m, f.b, f.n, 0, f.n, &next), -1);
	f.n = 0;
	header(&f, 0x4A695444, 40);
	f.b[8] = 16; /* a header shorter than its fields */
	assert_int_equal(jitdump_parse(&m, f.b, f.n, 0, f.n, &next), -1);
	/* a longer header (a later writer's fields) is stepped over */
	f.n = 0;
	header(&f, 0x4A695444, 64);
	load(&f, 0x1000, 4, "after-a-long-header");
	assert_int_equal(jitdump_parse(&m, f.b, f.n, 0, f.n, &next), 0);
	assert_int_equal(m.n, 1);
	perfmap_free(&m);
	/* a load whose name has no NUL in the record is skipped, the next taken */
	f.n = 0;
	header(&f, 0x4A695444, 40);
	at = load(&f, 0x1000, 0, "unterminated");
	f.n--; /* drop the NUL ... */
	f.b[at + 4] = (uint8_t)(f.b[at + 4] - 1); /* ... and count it out */
	load(&f, 0x2000, 4, "next");
	assert_int_equal(jitdump_parse(&m, f.b, f.n, 0, f.n, &next), 0);
	assert_int_equal(next, f.n);
	assert_int_equal(m.n, 1);
	assert_string_equal(m.v[0].name, "next");
	perfmap_free(&m);
	/* records too short for their kind are skipped; one shorter than a
	 * record header ends the parse (nothing after it can be found) */
	f.n = 0;
	header(&f, 0x4A695444, 40);
	other(&f, 0, 10);  /* a "load" of 26 bytes */
	other(&f, 1, 20);  /* a "move" of 36 */
	load(&f, 0x5000, 8, "kept");
	at = other(&f, 2, 0);
	f.b[at + 4] = 8;
	load(&f, 0x6000, 8, "lost");
	assert_int_equal(jitdump_parse(&m, f.b, f.n, 0, f.n, &next), 0);
	assert_int_equal(m.n, 1);
	assert_string_equal(m.v[0].name, "kept");
	assert_int_equal(next, at);
	perfmap_free(&m);
	/* control bytes in a name are shown as '?' */
	f.n = 0;
	header(&f, 0x4A695444, 40);
	load(&f, 0x1000, 4, "a\tb\x1b");
	assert_int_equal(jitdump_parse(&m, f.b, f.n, 0, f.n, &next), 0);
	assert_string_equal(m.v[0].name, "a?b?");
	perfmap_free(&m);
}

static void write_file(const char *path, const struct file *f, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, f->b, n), (ssize_t)n);
	close(fd);
}

static void read_from_the_mapping_the_process_has(void **state)
{
	struct file f = { .n = 0 };
	struct perfmap m = { 0 };
	char path[128], other_name[128], why[256];
	size_t beta;
	void *map, *decoy;
	int fd;

	(void)state;
	sample(&f, &beta);
	/* no mapping of a jitdump file: nothing, not an error */
	assert_int_equal(jitdump_read(&m, getpid(), why, sizeof(why)), 0);
	/* a file named for another pid is not this process's */
	snprintf(other_name, sizeof(other_name), "%s/jit-%d.dump", test_dir, getpid() + 1);
	write_file(other_name, &f, f.n);
	fd = open(other_name, O_RDONLY);
	decoy = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	assert_true(decoy != MAP_FAILED);
	close(fd);
	assert_int_equal(jitdump_read(&m, getpid(), why, sizeof(why)), 0);
	/* as a JIT does: the file mapped (a page, executable), records appended */
	snprintf(path, sizeof(path), "%s/jit-%d.dump", test_dir, getpid());
	write_file(path, &f, beta + 20);
	fd = open(path, O_RDONLY);
	map = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	assert_true(map != MAP_FAILED);
	close(fd);
	assert_int_equal(jitdump_read(&m, getpid(), why, sizeof(why)), 1);
	assert_int_equal(m.n, 1);
	assert_int_equal(m.read_to, beta);
	write_file(path, &f, f.n);
	assert_int_equal(jitdump_read(&m, getpid(), why, sizeof(why)), 1);
	assert_int_equal(m.n, 3);
	assert_string_equal(name_at(&m, 0x3000), "alpha");
	assert_int_equal(jitdump_read(&m, getpid(), why, sizeof(why)), 0); /* nothing new */
	/* a file owned by someone else is refused */
	assert_int_equal(chown(path, 4321, 4321), 0);
	assert_int_equal(jitdump_read(&m, getpid(), why, sizeof(why)), -1);
	assert_non_null(strstr(why, "owned by uid 4321"));
	assert_int_equal(chown(path, getuid(), getgid()), 0);
	/* a file that is not jitdump is refused */
	f.b[0] ^= 0xff;
	write_file(path, &f, f.n);
	perfmap_free(&m);
	assert_int_equal(jitdump_read(&m, getpid(), why, sizeof(why)), -1);
	assert_non_null(strstr(why, "not a jitdump file"));
	munmap(map, 4096);
	munmap(decoy, 4096);
	perfmap_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(whole_file),
		cmocka_unit_test(records_are_taken_once_the_file_holds_them),
		cmocka_unit_test(bad_files),
		cmocka_unit_test(read_from_the_mapping_the_process_has),
	};
	return cmocka_run_group_tests(tests, test_dir_make, test_dir_remove);
}
