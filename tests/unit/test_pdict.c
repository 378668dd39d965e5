/* test_pdict.c - the dictionary pprof and OTLP share: entry 0 of each table
 * is the zero value, each string, function, mapping and location is added
 * once, in the order first asked for, and strings come out UTF-8. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pdict.h"

static struct binary libc = { "/lib/libc.so.6", "00112233", 0x1000, 0x9000, 0x1000 };

static void zero_entries_come_first(void **state)
{
	struct pdict d;

	(void)state;
	assert_int_equal(pdict_init(&d), 0);
	assert_int_equal(d.nstr, 1);
	assert_string_equal(d.str[0], "");
	assert_int_equal(d.nfunc, 1);
	assert_int_equal(d.nmap, 1);
	assert_int_equal(d.nloc, 1);
	assert_int_equal(d.func[0].name, 0);
	assert_null(d.map[0].bin);
	assert_int_equal(d.loc[0].func, 0);
	assert_int_equal(pdict_str(&d, ""), 0);
	pdict_free(&d);
}

static void each_entry_is_added_once_in_first_use_order(void **state)
{
	struct pdict d;
	struct out_loc py = { OUT_LOC_PYTHON, "main", "/w/app.py", 5, 7, NULL, 0 };
	struct out_loc py2 = py, nat = { OUT_LOC_NATIVE, "memcpy", "libc.so.6", 0, 0, &libc, 0x42 };
	struct out_loc nat2 = nat;
	int32_t a, b, c, e;

	(void)state;
	assert_int_equal(pdict_init(&d), 0);
	a = pdict_loc(&d, &py);
	py2.line = 9; /* the same function at another line */
	b = pdict_loc(&d, &py2);
	c = pdict_loc(&d, &nat);
	nat2.addr = 0x43; /* the same symbol at another address */
	e = pdict_loc(&d, &nat2);
	assert_int_equal(a, 1);
	assert_int_equal(b, 2);
	assert_int_equal(c, 3);
	assert_int_equal(e, 4);
	assert_int_equal(pdict_loc(&d, &py), a);
	assert_int_equal(pdict_loc(&d, &nat), c);
	assert_int_equal(d.nloc, 5);
	assert_int_equal(d.nfunc, 3); /* main, memcpy */
	assert_int_equal(d.loc[a].func, d.loc[b].func);
	assert_int_equal(d.loc[b].line, 9);
	assert_int_equal(d.loc[c].map, 1);
	assert_int_equal(d.loc[a].map, 0);
	assert_int_equal(d.nmap, 2);
	assert_ptr_equal(d.map[1].bin, &libc);
	assert_string_equal(d.str[d.map[1].file], "/lib/libc.so.6");
	assert_string_equal(d.str[d.map[1].build_id], "00112233");
	assert_string_equal(d.str[d.func[d.loc[a].func].name], "main");
	assert_string_equal(d.str[d.func[d.loc[a].func].file], "/w/app.py");
	assert_int_equal(d.func[d.loc[a].func].start_line, 5);
	/* strings in the order first asked for: main, /w/app.py, memcpy, ... */
	assert_string_equal(d.str[1], "main");
	assert_string_equal(d.str[2], "/w/app.py");
	assert_string_equal(d.str[3], "memcpy");
	/* a marker and a Python function of one name are two functions */
	py.kind = OUT_LOC_MARK;
	assert_int_not_equal(d.loc[pdict_loc(&d, &py)].func, d.loc[a].func);
	pdict_free(&d);
}

static void strings_come_out_utf8(void **state)
{
	struct pdict d;
	int32_t i, j;

	(void)state;
	assert_int_equal(pdict_init(&d), 0);
	i = pdict_str(&d, "caf\xc3\xa9 \xff!");
	j = pdict_str(&d, "caf\xc3\xa9 \xff!");
	assert_int_equal(i, j);
	assert_string_equal(d.str[i], "caf\xc3\xa9 \xef\xbf\xbd!");
	pdict_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(zero_entries_come_first),
		cmocka_unit_test(each_entry_is_added_once_in_first_use_order),
		cmocka_unit_test(strings_come_out_utf8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
