/* replay.c - run a fuzz target over files, once each, without libFuzzer:
 * linked with a target and the unit tests' AddressSanitizer/UBSan objects,
 * it replays the committed corpus in `make unit`, so an input that once
 * crashed a parser keeps failing the build if the bug comes back.
 *
 * Usage: replay_NAME FILE|DIR...  (a directory: every file in it).  An
 * overread, a leak or undefined behaviour aborts with the sanitizer's
 * report; a file that cannot be read is an error too. */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL, *in;
	size_t len = 0, cap = 0, n;

	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	do {
		if (len == cap) {
			uint8_t *nb = realloc(buf, cap = cap ? cap * 2 : 4096);

			if (!nb)
				abort();
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n);
	fclose(f);
	/* a copy of exactly len bytes, as libFuzzer gives: an overread of the
	 * input shows */
	if (!(in = malloc(len ? len : 1)))
		abort();
	memcpy(in, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(in, len);
	free(in);
	return 0;
}

/* every regular file in dir, in name order; how many, or -1 */
static int run_dir(const char *dir)
{
	struct dirent **ents;
	char path[4096];
	int n = scandir(dir, &ents, NULL, alphasort), done = 0;

	if (n < 0) {
		fprintf(stderr, "%s: %s\n", dir, strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
		if (ents[i]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			if (run_file(path) < 0)
				done = -1;
			else if (done >= 0)
				done++;
		}
		free(ents[i]);
	}
	free(ents);
	return done;
}

int main(int argc, char **argv)
{
	int total = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		int n;

		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		n = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]);
		if (n < 0)
			return 1;
		total += S_ISDIR(st.st_mode) ? n : 1;
	}
	printf("%s: %d inputs replayed\n", argv[0], total);
	return 0;
}
