/* test_out_otlp.c - the OTLP writer on hand-built profiles, decoded back with
 * protobuf-c: entry 0 of every table is the zero value, one resource per
 * process with its attributes, tables shared between processes, stacks leaf
 * first with the [truncated] marker at the root end, frame types, native
 * locations in a mapping with the build-id, thread attributes on samples,
 * one value per sample (the count in cpu mode, with the period), samples of
 * one (stack, thread) merged, strings made UTF-8, equal input giving equal
 * bytes, and an empty profile still a valid request. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "linetable.h"
#include "output.h"
#include "profile.h"
#include "profutil.h"
#include "otlp_profiles.pb-c.h"

#define PID 4000000u
#define PID2 4000001u

typedef Otlp__ProfilesRequest Request;
typedef Otlp__Location Location;
typedef Otlp__Function Function;
typedef Otlp__Sample Sample;

static uint8_t lnotab[] = { 4, 1 };
static struct func f_main = { "main", "/w/app.py", 5, LT_LNOTAB, NULL, 0, FN_PYTHON, NULL, 0 };
static struct func f_leaf = { "leaf", "/w/app.py", 10, LT_LNOTAB, lnotab, sizeof(lnotab),
				FN_PYTHON, NULL, 0 };
static struct func f_bad = { "bad\xff", "/w/app.py", 30, LT_LNOTAB, NULL, 0, FN_PYTHON, NULL, 0 };
static struct binary libc = { "/lib/libc.so.6", "00112233", 0x1000, 0x9000, 0x800 };
static struct func f_memcpy = { "memcpy", "libc.so.6", 0, 0, NULL, 0, FN_NATIVE, &libc, 0x4242 };

static char *write_otlp(const struct profile *p, enum pyperf_mode mode, size_t *len)
{
	struct out_ctx c = { .prof = p, .lines = true, .duration_s = 2.5, .freq = 100,
			     .mode = mode, .start_unix_ns = 1234 };
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	assert_non_null(f);
	assert_int_equal(out_otlp(f, &c), 0);
	fclose(f);
	return buf;
}

static Request *roundtrip(const struct profile *p, enum pyperf_mode mode)
{
	size_t len = 0;
	char *buf = write_otlp(p, mode, &len);
	Request *r = otlp__profiles_request__unpack(NULL, len, (uint8_t *)buf);

	assert_non_null(r);
	assert_non_null(r->dictionary);
	free(buf);
	return r;
}

static const char *str(const Request *r, int32_t i)
{
	assert_true(i >= 0 && (size_t)i < r->dictionary->n_string_table);
	return r->dictionary->string_table[i];
}

static const Location *loc(const Request *r, int32_t i)
{
	assert_true(i > 0 && (size_t)i < r->dictionary->n_location_table);
	return r->dictionary->location_table[i];
}

static const Function *loc_func(const Request *r, int32_t i)
{
	const Location *l = loc(r, i);

	assert_int_equal(l->n_lines, 1);
	return r->dictionary->function_table[l->lines[0]->function_index];
}

/* attribute key of table entry i: its string value, or NULL for an int */
static const char *attr_str(const Request *r, int32_t i, const char *key)
{
	const Otlp__KeyValueAndUnit *a = r->dictionary->attribute_table[i];

	assert_string_equal(str(r, a->key_strindex), key);
	return a->value->value_case == OTLP__ANY_VALUE__VALUE_STRING_VALUE ? a->value->string_value
									   : NULL;
}

static const Otlp__AnyValue *res_attr(const Otlp__ResourceProfiles *rp, const char *key)
{
	for (size_t i = 0; i < rp->resource->n_attributes; i++)
		if (!strcmp(rp->resource->attributes[i]->key, key))
			return rp->resource->attributes[i]->value;
	return NULL;
}

static const Otlp__Profile *only_profile(const Otlp__ResourceProfiles *rp)
{
	assert_int_equal(rp->n_scope_profiles, 1);
	assert_string_equal(rp->scope_profiles[0]->scope->name, "pyperf-bpf");
	assert_int_equal(rp->scope_profiles[0]->n_profiles, 1);
	return rp->scope_profiles[0]->profiles[0];
}

static void tables_start_with_zero_and_processes_share_them(void **state)
{
	const Otlp__ProfilesDictionary *d;
	struct profile p;
	Request *r;

	profile_init(&p);
	add_stack(&p, PID, 1, 7, 0, 5, NULL, 0, 2, &f_leaf, 4u, &f_main, 0u);
	add_stack(&p, PID2, 1, 8, 0, 3, NULL, 0, 2, &f_leaf, 4u, &f_main, 0u);
	r = roundtrip(&p, MODE_CPU);
	d = r->dictionary;
	assert_string_equal(d->string_table[0], "");
	assert_int_equal(d->function_table[0]->name_strindex, 0);
	assert_int_equal(d->location_table[0]->n_lines, 0);
	assert_int_equal(d->mapping_table[0]->filename_strindex, 0);
	assert_int_equal(d->stack_table[0]->n_location_indices, 0);
	assert_int_equal(d->attribute_table[0]->key_strindex, 0);
	assert_int_equal(d->n_link_table, 1);
	assert_int_equal(r->n_resource_profiles, 2);
	/* the same stack in two processes: one stack entry */
	assert_int_equal(d->n_stack_table, 2);
	for (size_t i = 0; i < 2; i++) {
		const Otlp__ResourceProfiles *rp = r->resource_profiles[i];
		const Otlp__Profile *x = only_profile(rp);

		assert_int_equal(res_attr(rp, "process.pid")->int_value, i ? PID2 : PID);
		assert_non_null(res_attr(rp, "service.name"));
		assert_non_null(strstr(res_attr(rp, "service.name")->string_value, "unknown_service:"));
		assert_non_null(res_attr(rp, "host.name"));
		assert_int_equal(x->n_samples, 1);
		assert_int_equal(x->samples[0]->stack_index, 1);
		assert_int_equal(x->samples[0]->values[0], i ? 3 : 5);
		assert_string_equal(str(r, x->sample_type->type_strindex), "samples");
		assert_string_equal(str(r, x->sample_type->unit_strindex), "count");
		assert_string_equal(str(r, x->period_type->type_strindex), "cpu");
		assert_int_equal(x->period, 10000000);
		assert_int_equal(x->time_unix_nano, 1234);
		assert_int_equal(x->duration_nano, 2500000000ull);
		assert_int_equal(x->profile_id.len, 16);
	}
	/* two processes, two ids */
	assert_memory_not_equal(only_profile(r->resource_profiles[0])->profile_id.data,
				only_profile(r->resource_profiles[1])->profile_id.data, 16);
	otlp__profiles_request__free_unpacked(r, NULL);
	profile_free(&p);
}

static void stacks_are_leaf_first_with_types_lines_and_threads(void **state)
{
	struct profile p;
	const Otlp__Stack *st;
	const Sample *s;
	const Location *l;
	Request *r;

	profile_init(&p);
	add_stack(&p, PID, 1, 7, STACK_TRUNCATED, 5, NULL, 0, 3, &f_memcpy, 0u, &f_leaf, 4u,
		  &f_main, 0u);
	add_stack(&p, PID, 1, 7, STACK_TRUNCATED, 2, NULL, 0, 3, &f_memcpy, 0u, &f_leaf, 4u,
		  &f_main, 0u);
	r = roundtrip(&p, MODE_CPU);
	s = only_profile(r->resource_profiles[0])->samples[0];
	assert_int_equal(only_profile(r->resource_profiles[0])->n_samples, 1);
	assert_int_equal(s->values[0], 7); /* one (stack, thread): merged */
	st = r->dictionary->stack_table[s->stack_index];
	assert_int_equal(st->n_location_indices, 4);
	l = loc(r, st->location_indices[0]);
	assert_string_equal(str(r, loc_func(r, st->location_indices[0])->name_strindex), "memcpy");
	assert_string_equal(str(r, r->dictionary->mapping_table[l->mapping_index]->filename_strindex),
			    "/lib/libc.so.6");
	assert_int_equal(l->address, 0x4242);
	assert_string_equal(attr_str(r, l->attribute_indices[0], "profile.frame.type"), "native");
	assert_string_equal(attr_str(r, r->dictionary->mapping_table[l->mapping_index]->attribute_indices[0],
				     "process.executable.build_id.gnu"), "00112233");
	l = loc(r, st->location_indices[1]);
	assert_string_equal(str(r, loc_func(r, st->location_indices[1])->name_strindex), "leaf");
	assert_int_equal(loc_func(r, st->location_indices[1])->start_line, 10);
	assert_int_equal(l->lines[0]->line, 11);
	assert_int_equal(l->mapping_index, 0);
	assert_string_equal(attr_str(r, l->attribute_indices[0], "profile.frame.type"), "cpython");
	assert_string_equal(str(r, loc_func(r, st->location_indices[2])->name_strindex), "main");
	assert_string_equal(str(r, loc_func(r, st->location_indices[3])->name_strindex), "[truncated]");
	assert_int_equal(s->n_attribute_indices, 2);
	assert_null(attr_str(r, s->attribute_indices[0], "thread.id"));
	assert_int_equal(r->dictionary->attribute_table[s->attribute_indices[0]]->value->int_value, 7);
	assert_non_null(attr_str(r, s->attribute_indices[1], "thread.name"));
	otlp__profiles_request__free_unpacked(r, NULL);
	profile_free(&p);
}

static void other_modes_count_their_quantity(void **state)
{
	struct profile p;
	const Otlp__Profile *x;
	Request *r;

	profile_init(&p);
	add_stack(&p, PID, 1, 7, 0, 5000, NULL, 0, 1, &f_main, 0u);
	r = roundtrip(&p, MODE_WALL);
	x = only_profile(r->resource_profiles[0]);
	assert_string_equal(str(r, x->sample_type->type_strindex), "wall");
	assert_string_equal(str(r, x->sample_type->unit_strindex), "nanoseconds");
	assert_int_equal(x->samples[0]->values[0], 5000);
	otlp__profiles_request__free_unpacked(r, NULL);
	r = roundtrip(&p, MODE_FAULTS);
	x = only_profile(r->resource_profiles[0]);
	assert_string_equal(str(r, x->sample_type->unit_strindex), "bytes");
	assert_int_equal(x->period, 0);
	otlp__profiles_request__free_unpacked(r, NULL);
	profile_free(&p);
}

static void utf8_equal_bytes_and_empty(void **state)
{
	struct profile p;
	size_t l1, l2;
	char *a, *b;
	Request *r;

	profile_init(&p);
	r = roundtrip(&p, MODE_CPU); /* empty: still a request with the zero entries */
	assert_int_equal(r->n_resource_profiles, 0);
	assert_string_equal(r->dictionary->string_table[0], "");
	otlp__profiles_request__free_unpacked(r, NULL);
	add_stack(&p, PID, 1, 7, 0, 1, NULL, 0, 1, &f_bad, 0u);
	r = roundtrip(&p, MODE_CPU);
	assert_string_equal(str(r, loc_func(r, r->dictionary->stack_table[1]->location_indices[0])
					->name_strindex), "bad\xef\xbf\xbd");
	otlp__profiles_request__free_unpacked(r, NULL);
	a = write_otlp(&p, MODE_CPU, &l1);
	b = write_otlp(&p, MODE_CPU, &l2);
	assert_int_equal(l1, l2);
	assert_memory_equal(a, b, l1);
	free(a);
	free(b);
	profile_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tables_start_with_zero_and_processes_share_them),
		cmocka_unit_test(stacks_are_leaf_first_with_types_lines_and_threads),
		cmocka_unit_test(other_modes_count_their_quantity),
		cmocka_unit_test(utf8_equal_bytes_and_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
