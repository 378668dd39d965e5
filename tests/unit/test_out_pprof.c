/* test_out_pprof.c - the pprof writer on hand-built profiles, decoded back
 * with protobuf-c: the string table starts with "", ids are dense from 1,
 * locations are leaf first with the [truncated] marker at the root end,
 * Python locations carry the current line (line 0 with --no-lines, where
 * samples that become equal merge), native ones a mapping with the binary's
 * build-id and ELF address, every sample the four labels, and strings that
 * were not UTF-8 are made so. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <zlib.h>

#include "linetable.h"
#include "output.h"
#include "profile.h"
#include "profutil.h"
#include "profile.pb-c.h"

#define PID 4000000u

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__Sample Sample;

/* lnotab: line 10 for offsets 0-3, line 11 from offset 4 */
static uint8_t lnotab[] = { 4, 1 };
static struct func f_main = { "main", "/w/app.py", 5, LT_LNOTAB, NULL, 0, FN_PYTHON, NULL, 0 };
static struct func f_leaf = { "leaf", "/w/app.py", 10, LT_LNOTAB, lnotab, sizeof(lnotab),
				FN_PYTHON, NULL, 0 };
static struct func f_bad = { "bad\xff", "/w/app.py", 30, LT_LNOTAB, NULL, 0, FN_PYTHON, NULL, 0 };
static struct binary libc = { "/lib/libc.so.6", "00112233", 0x1000, 0x9000, 0x800 };
static struct func f_memcpy = { "memcpy", "libc.so.6", 0, 0, NULL, 0, FN_NATIVE, &libc, 0x4242 };

/* a stack of process PID without kernel frames */
#define add(p, hash, tid, flags, count, ...) \
	add_stack(p, PID, hash, tid, flags, count, NULL, 0, __VA_ARGS__)

static uint8_t *gunzip(const char *in, size_t len, size_t *out_len)
{
	size_t cap = 1 << 20;
	uint8_t *out = malloc(cap);
	z_stream z;

	assert_non_null(out);
	memset(&z, 0, sizeof(z));
	assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
	z.next_in = (uint8_t *)in;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
	*out_len = z.total_out;
	inflateEnd(&z);
	return out;
}

/* write p as pprof and decode it again */
static Profile *roundtrip(const struct profile *p, bool lines)
{
	struct out_ctx c = { .prof = p, .lines = lines, .duration_s = 2.5, .freq = 100,
			     .title = "python app.py", .start_unix_ns = 1234 };
	char *buf = NULL;
	size_t len = 0, plen;
	FILE *f = open_memstream(&buf, &len);
	uint8_t *raw;
	Profile *prof;

	assert_non_null(f);
	assert_int_equal(out_pprof(f, &c), 0);
	fclose(f);
	raw = gunzip(buf, len, &plen);
	prof = perftools__profiles__profile__unpack(NULL, plen, raw);
	assert_non_null(prof);
	free(raw);
	free(buf);
	return prof;
}

static const char *str(const Profile *x, int64_t i)
{
	assert_true(i >= 0 && (size_t)i < x->n_string_table);
	return x->string_table[i];
}

static const Location *loc(const Profile *x, uint64_t id)
{
	assert_true(id >= 1 && id <= x->n_location);
	assert_int_equal(x->location[id - 1]->id, id);
	return x->location[id - 1];
}

static const Function *loc_func(const Profile *x, uint64_t id)
{
	const Location *l = loc(x, id);
	uint64_t fid;

	assert_int_equal(l->n_line, 1);
	fid = l->line[0]->function_id;
	assert_true(fid >= 1 && fid <= x->n_function);
	assert_int_equal(x->function[fid - 1]->id, fid);
	return x->function[fid - 1];
}

static const char *label_str(const Profile *x, const Sample *s, const char *key)
{
	for (size_t i = 0; i < s->n_label; i++)
		if (!strcmp(str(x, s->label[i]->key), key))
			return s->label[i]->str ? str(x, s->label[i]->str) : NULL;
	fail_msg("no label %s", key);
	return NULL;
}

static int64_t label_num(const Profile *x, const Sample *s, const char *key)
{
	for (size_t i = 0; i < s->n_label; i++)
		if (!strcmp(str(x, s->label[i]->key), key))
			return s->label[i]->num;
	fail_msg("no label %s", key);
	return -1;
}

static void header_and_ids_follow_the_format(void **state)
{
	struct profile p;
	Profile *x;

	profile_init(&p);
	add(&p, 1, 7, 0, 5, 2, &f_leaf, 0u, &f_main, 0u);
	x = roundtrip(&p, true);
	assert_string_equal(str(x, 0), "");
	assert_int_equal(x->n_sample_type, 2);
	assert_string_equal(str(x, x->sample_type[0]->type), "samples");
	assert_string_equal(str(x, x->sample_type[0]->unit), "count");
	assert_string_equal(str(x, x->sample_type[1]->type), "cpu");
	assert_string_equal(str(x, x->sample_type[1]->unit), "nanoseconds");
	assert_string_equal(str(x, x->period_type->type), "cpu");
	assert_string_equal(str(x, x->period_type->unit), "nanoseconds");
	assert_int_equal(x->period, 10000000);
	assert_int_equal(x->duration_nanos, 2500000000LL);
	assert_int_equal(x->time_nanos, 1234);
	assert_int_equal(x->n_comment, 1);
	assert_string_equal(str(x, x->comment[0]), "python app.py");
	for (size_t i = 0; i < x->n_function; i++)
		assert_int_equal(x->function[i]->id, i + 1);
	perftools__profiles__profile__free_unpacked(x, NULL);
	profile_free(&p);
}

static void samples_are_leaf_first_with_lines_and_labels(void **state)
{
	struct profile p;
	const Function *fn;
	const Sample *s;
	Profile *x;

	profile_init(&p);
	add(&p, 1, 7, STACK_TRUNCATED, 5, 2, &f_leaf, 4u, &f_main, 0u);
	x = roundtrip(&p, true);
	assert_int_equal(x->n_sample, 1);
	s = x->sample[0];
	assert_int_equal(s->n_value, 2);
	assert_int_equal(s->value[0], 5);
	assert_int_equal(s->value[1], 5 * 10000000LL);
	assert_int_equal(s->n_location_id, 3);
	fn = loc_func(x, s->location_id[0]);
	assert_string_equal(str(x, fn->name), "leaf");
	assert_string_equal(str(x, fn->filename), "/w/app.py");
	assert_int_equal(fn->start_line, 10);
	assert_int_equal(loc(x, s->location_id[0])->line[0]->line, 11);
	assert_string_equal(str(x, loc_func(x, s->location_id[1])->name), "main");
	assert_string_equal(str(x, loc_func(x, s->location_id[2])->name), "[truncated]");
	assert_int_equal(label_num(x, s, "pid"), PID);
	assert_int_equal(label_num(x, s, "thread_id"), 7);
	assert_non_null(label_str(x, s, "thread_name"));
	assert_non_null(label_str(x, s, "process_name"));
	perftools__profiles__profile__free_unpacked(x, NULL);
	profile_free(&p);
}

static void native_frames_have_a_mapping_with_build_id(void **state)
{
	struct profile p;
	const Location *l;
	Profile *x;

	profile_init(&p);
	add(&p, 1, 7, 0, 1, 2, &f_memcpy, 0u, &f_main, 0u);
	add(&p, 2, 7, 0, 1, 3, &f_memcpy, 0u, &f_leaf, 0u, &f_main, 0u);
	x = roundtrip(&p, true);
	assert_int_equal(x->n_mapping, 1);
	assert_int_equal(x->mapping[0]->id, 1);
	assert_int_equal(x->mapping[0]->memory_start, 0x1000);
	assert_int_equal(x->mapping[0]->memory_limit, 0x9000);
	assert_int_equal(x->mapping[0]->file_offset, 0x800);
	assert_string_equal(str(x, x->mapping[0]->filename), "/lib/libc.so.6");
	assert_string_equal(str(x, x->mapping[0]->build_id), "00112233");
	assert_true(x->mapping[0]->has_functions);
	l = loc(x, x->sample[0]->location_id[0]);
	assert_int_equal(l->mapping_id, 1);
	assert_int_equal(l->address, 0x4242);
	/* one location per (binary, address), shared by both samples */
	assert_int_equal(x->sample[1]->location_id[0], x->sample[0]->location_id[0]);
	assert_string_equal(str(x, loc_func(x, l->id)->name), "memcpy");
	assert_string_equal(str(x, loc_func(x, l->id)->filename), "/lib/libc.so.6");
	perftools__profiles__profile__free_unpacked(x, NULL);
	profile_free(&p);
}

static void no_lines_merges_samples_of_one_function(void **state)
{
	struct profile p;
	Profile *x;

	profile_init(&p);
	add(&p, 1, 7, 0, 5, 2, &f_leaf, 0u, &f_main, 0u);
	add(&p, 2, 7, 0, 3, 2, &f_leaf, 6u, &f_main, 0u);
	x = roundtrip(&p, true);
	assert_int_equal(x->n_sample, 2);
	perftools__profiles__profile__free_unpacked(x, NULL);
	x = roundtrip(&p, false);
	assert_int_equal(x->n_sample, 1);
	assert_int_equal(x->sample[0]->value[0], 8);
	assert_int_equal(x->n_location, 2);
	for (size_t i = 0; i < x->n_location; i++)
		assert_int_equal(x->location[i]->line[0]->line, 0);
	perftools__profiles__profile__free_unpacked(x, NULL);
	profile_free(&p);
}

static void strings_that_are_not_utf8_are_replaced(void **state)
{
	struct profile p;
	Profile *x;

	profile_init(&p);
	add(&p, 1, 7, 0, 1, 1, &f_bad, 0u);
	x = roundtrip(&p, true);
	assert_string_equal(str(x, loc_func(x, x->sample[0]->location_id[0])->name),
			    "bad\xef\xbf\xbd");
	perftools__profiles__profile__free_unpacked(x, NULL);
	profile_free(&p);
}

static void empty_profile_is_valid(void **state)
{
	struct profile p;
	Profile *x;

	profile_init(&p);
	x = roundtrip(&p, true);
	assert_int_equal(x->n_sample, 0);
	assert_string_equal(str(x, 0), "");
	perftools__profiles__profile__free_unpacked(x, NULL);
	profile_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(header_and_ids_follow_the_format),
		cmocka_unit_test(samples_are_leaf_first_with_lines_and_labels),
		cmocka_unit_test(native_frames_have_a_mapping_with_build_id),
		cmocka_unit_test(no_lines_merges_samples_of_one_function),
		cmocka_unit_test(strings_that_are_not_utf8_are_replaced),
		cmocka_unit_test(empty_profile_is_valid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
