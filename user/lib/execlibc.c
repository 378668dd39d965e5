/* execlibc.c - the C library a command will map, from its program
 * interpreter (see execlibc.h). */
#include "execlibc.h"

#include <ctype.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* name as execvp finds it */
static bool find_program(const char *name, char *out, size_t outlen)
{
	const char *path = getenv("PATH");
	size_t n = strlen(name);

	if (!*name || n >= outlen)
		return false;
	if (strchr(name, '/')) {
		memcpy(out, name, n + 1);
		return access(out, X_OK) == 0;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *end = strchrnul(path, ':');
		size_t dl = (size_t)(end - path);

		if (dl == 0) { /* an empty entry is the current directory */
			if (n + 1 <= outlen) {
				memcpy(out, name, n + 1);
				if (access(out, X_OK) == 0)
					return true;
			}
		} else if (dl + 1 + n + 1 <= outlen) {
			memcpy(out, path, dl);
			out[dl] = '/';
			memcpy(out + dl + 1, name, n + 1);
			if (access(out, X_OK) == 0)
				return true;
		}
		path = *end ? end + 1 : end;
	}
	return false;
}

/* the PT_INTERP string of the ELF file fd, into out */
static bool elf_interp(int fd, char *out, size_t outlen)
{
	Elf *e;
	size_t n;
	bool found = false;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e)
		return false;
	if (elf_kind(e) == ELF_K_ELF && elf_getphdrnum(e, &n) == 0) {
		for (size_t i = 0; i < n && !found; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_INTERP)
				continue;
			if (ph.p_filesz < 2 || ph.p_filesz > outlen)
				break;
			found = pread(fd, out, ph.p_filesz, (off_t)ph.p_offset) == (ssize_t)ph.p_filesz &&
				out[ph.p_filesz - 1] == '\0' && out[0] == '/';
		}
	}
	elf_end(e);
	return found;
}

/* "#!/path/interp [arg]": the program it runs (env's NAME looked up) */
static bool script_interp(const char *head, char *out, size_t outlen)
{
	char line[256], *p, *prog, *arg;
	size_t n = strcspn(head + 2, "\n");

	if (n >= sizeof(line))
		return false;
	memcpy(line, head + 2, n);
	line[n] = '\0';
	for (p = line; *p == ' ' || *p == '\t'; p++)
		;
	prog = p;
	while (*p && !isspace((unsigned char)*p))
		p++;
	if (*p)
		*p++ = '\0';
	while (*p == ' ' || *p == '\t')
		p++;
	arg = p;
	while (*p && !isspace((unsigned char)*p))
		p++;
	*p = '\0';
	if (*prog != '/')
		return false;
	{
		const char *base = strrchr(prog, '/') + 1;

		if (!strcmp(base, "env") && *arg && *arg != '-')
			return find_program(arg, out, outlen);
	}
	if (strlen(prog) >= outlen)
		return false;
	strcpy(out, prog);
	return true;
}

int exec_libc_guess(const char *cmd, char *out, size_t outlen)
{
	char prog[PATH_MAX], interp[PATH_MAX], real[PATH_MAX], head[256];

	if (!find_program(cmd, prog, sizeof(prog)))
		return -1;
	for (int depth = 0; depth < 3; depth++) {
		int fd = open(prog, O_RDONLY | O_CLOEXEC);
		ssize_t got;
		char *slash;

		if (fd < 0)
			return -1;
		got = pread(fd, head, sizeof(head) - 1, 0);
		if (got >= 2 && head[0] == '#' && head[1] == '!') {
			close(fd);
			head[got] = '\0';
			if (!script_interp(head, interp, sizeof(interp)))
				return -1;
			memcpy(prog, interp, strlen(interp) + 1);
			continue;
		}
		if (got < 4 || memcmp(head, "\177ELF", 4) || !elf_interp(fd, interp, sizeof(interp))) {
			close(fd);
			return -1;
		}
		close(fd);
		if (!realpath(interp, real) || !(slash = strrchr(real, '/')))
			return -1;
		if ((size_t)(slash - real) + sizeof("/libc.so.6") > outlen)
			return -1;
		memcpy(out, real, (size_t)(slash - real));
		strcpy(out + (slash - real), "/libc.so.6");
		return access(out, R_OK) == 0 ? 0 : -1;
	}
	return -1;
}
