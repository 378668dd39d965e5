/* fuzz_pyread_str.c - decoding a str object read out of a process.  The
 * "process" is this one: the input is laid out as a str object in a buffer
 * here, with the offsets of a CPython version, and pyread_str reads it with
 * process_vm_readv like any target's.
 *
 * Input: one byte picking the version (3.8 + n % 8), four bytes of `state`
 * (kind, compact, ascii bits), eight of `length`; the rest are the
 * characters.  The buffer always holds PYREAD_MAX_CHARS characters of the
 * widest kind (zeros past the input), so a read never leaves it whatever
 * the length says.
 *
 * Checked: the result is valid UTF-8 holding every character up to
 * PYREAD_MAX_CHARS (a U+0000 ends it early, as a C string), and a longer
 * str ends with the cut marker. */
#include "fuzz.h"
#include "py_offsets_table.h"
#include "pyread.h"

static uint8_t obj[256 + 4 * PYREAD_MAX_CHARS] __attribute__((aligned(16)));

/* bytes of a valid UTF-8 sequence starting at s (no surrogates, at most
 * U+10FFFF, shortest form), or 0 */
static size_t utf8_len(const unsigned char *s)
{
	uint32_t c;
	size_t n;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0)
		n = 2, c = s[0] & 0x1f;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 3, c = s[0] & 0x0f;
	else if ((s[0] & 0xf8) == 0xf0)
		n = 4, c = s[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if ((n == 2 && c < 0x80) || (n == 3 && c < 0x800) || (n == 4 && c < 0x10000) ||
	    c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct py_offsets *o = py_offsets_for_version(3, 8 + (int)(fuzz_take(&data, &size, 1) % 8));
	uint32_t state = (uint32_t)fuzz_take(&data, &size, 4);
	uint64_t length = fuzz_take(&data, &size, 8), chars = 0, kept;
	unsigned kind = (state >> 2) & 7;
	char mark[64] = "";
	size_t at, n;
	char *s;

	if (!o || o->unicode_compact_size > 256 || o->unicode_ascii_size > 256)
		return 0;
	memset(obj, 0, sizeof(obj));
	memcpy(obj + o->unicode_length, &length, sizeof(length));
	memcpy(obj + o->unicode_state, &state, sizeof(state));
	at = (state >> 6 & 1) ? o->unicode_ascii_size : o->unicode_compact_size;
	n = size < sizeof(obj) - at ? size : sizeof(obj) - at;
	memcpy(obj + at, data, n);
	s = pyread_str(getpid(), (uint64_t)(uintptr_t)obj, o);
	if (!s)
		return 0;
	FUZZ_CHECK(kind == 1 || kind == 2 || kind == 4);
	for (const unsigned char *p = (const unsigned char *)s; *p; chars++) {
		size_t k = utf8_len(p);

		FUZZ_CHECK(k > 0);
		p += k;
	}
	kept = length > PYREAD_MAX_CHARS ? PYREAD_MAX_CHARS : length;
	if (length > PYREAD_MAX_CHARS)
		snprintf(mark, sizeof(mark), "...[cut: %llu characters]", (unsigned long long)length);
	/* every character kept (a NUL shown as U+FFFD, never ending the
	 * name early), then the marker of a cut */
	FUZZ_CHECK(chars == kept + strlen(mark));
	FUZZ_CHECK(strlen(s) >= strlen(mark));
	FUZZ_CHECK(strcmp(s + strlen(s) - strlen(mark), mark) == 0);
	free(s);
	return 0;
}
