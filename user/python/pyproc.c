/* pyproc.c - recognise a CPython process from outside.
 *
 * The interpreter state lives in the global `_PyRuntime` (3.7+), exported by
 * libpython (shared builds) or by the executable (static builds).  We look at
 * the executable and any mapped libpython*, find `_PyRuntime` and `Py_Version`
 * (3.11+) in their symbol tables, and add the load bias.  The version comes
 * from `Py_Version` in the target's memory, else from the file name.  Offsets
 * come from the target's own `_Py_DebugOffsets` (3.13+, read with the layout
 * of the version it names), else from the generated table.
 * Symbol lookups are cached per file (device, inode): a host with many Python
 * processes parses each interpreter binary once. */
#include "pyproc.h"
#include "errmsg.h"
#include "elfsym.h"
#include "procmaps.h"
#include "py_debug_offsets.h"
#include "py_offsets_table.h"
#include "pyread.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { SYM_RUNTIME, SYM_VERSION, SYM_GETVERSION, SYM_CODE_TYPE, SYM_STR_TYPE, SYM_BYTES_TYPE,
       SYM_NR };
static const char *const sym_names[SYM_NR] = { "_PyRuntime",  "Py_Version",     "Py_GetVersion",
					       "PyCode_Type", "PyUnicode_Type", "PyBytes_Type" };

/* What the symbols of an executable or libpython say, by file: its device
 * and inode, and its size and change time, so that a file made later on a
 * freed inode is not taken for the one before. */
struct elf_facts {
	uint64_t dev_major, dev_minor, inode;
	int64_t size, ctime_s, ctime_ns;
	uint64_t sym[SYM_NR];
	bool ok;
	struct elf_facts *next;
};

/* The files looked at last, most recent first: every process's executable
 * is looked at once (Python or not), so a long whole-host run sees new
 * ones all the time (fresh copies, build outputs) and keeps the newest. */
#define FACTS_KEPT 256
static struct elf_facts *facts_cache;

static const struct elf_facts *elf_facts_for(int pid, const struct proc_map *m)
{
	struct elf_facts *f, **pp, **last = NULL;
	char host[PATH_MAX + 32], err[256];
	uint64_t sizes[SYM_NR];
	struct stat st;
	size_t n = 0;

	if (!procmaps_file_path(pid, m, host, sizeof(host)) || stat(host, &st))
		return NULL; /* errno says why; not remembered: another process may map it readably */
	for (pp = &facts_cache; (f = *pp); pp = &f->next, n++) {
		if (f->inode == m->inode && f->dev_major == m->dev_major &&
		    f->dev_minor == m->dev_minor && f->size == (int64_t)st.st_size &&
		    f->ctime_s == (int64_t)st.st_ctim.tv_sec &&
		    f->ctime_ns == (int64_t)st.st_ctim.tv_nsec) {
			*pp = f->next; /* to the front */
			f->next = facts_cache;
			facts_cache = f;
			return f;
		}
		if (!f->next)
			last = pp;
	}
	if (n >= FACTS_KEPT && last) { /* the one looked at longest ago goes */
		free(*last);
		*last = NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->dev_major = m->dev_major;
	f->dev_minor = m->dev_minor;
	f->inode = m->inode;
	f->size = (int64_t)st.st_size;
	f->ctime_s = (int64_t)st.st_ctim.tv_sec;
	f->ctime_ns = (int64_t)st.st_ctim.tv_nsec;
	/* A file that could not be read is not remembered: the read may have
	 * failed for the moment only (the map_files link of a mapping the
	 * dynamic loader replaced between the look at the maps and the open,
	 * while a newborn maps its libpython), and remembered it would make
	 * the process, and every later one that maps the file, look like no
	 * Python for as long as the loader runs.  (A file that is not ELF at
	 * all, rare in an executable mapping, is so opened again at each look:
	 * its header is all that is read.) */
	if (elf_find_symbols(host, sym_names, SYM_NR, f->sym, sizes, err, sizeof(err))) {
		static const struct elf_facts unread = { .ok = false };

		free(f);
		return &unread;
	}
	f->ok = true;
	f->next = facts_cache;
	facts_cache = f;
	return f;
}

/* "python3.12", "libpython3.9.so.1.0", "libpython3.6m.so" -> 3, 12 */
static bool version_from_name(const char *base, int *major, int *minor)
{
	const char *p = strstr(base, "python");

	if (!p)
		return false;
	p += 6;
	if (!isdigit((unsigned char)p[0]) || p[1] != '.' || !isdigit((unsigned char)p[2]))
		return false;
	*major = p[0] - '0';
	*minor = atoi(p + 2);
	return true;
}

static bool interesting(const struct proc_map *m, const char *exe)
{
	const char *base = procmaps_basename(m);

	return m->path && m->path[0] == '/' &&
	       (!strncmp(base, "libpython", 9) || (exe && !strcmp(m->path, exe)));
}

/* Is addr in a writable mapping (the runtime's data, in place)? */
static bool writable_at(const struct proc_maps *maps, uint64_t addr)
{
	for (size_t i = 0; i < maps->n; i++)
		if (addr >= maps->v[i].start && addr < maps->v[i].end)
			return maps->v[i].perms[1] == 'w';
	return false;
}

static enum pyproc_status pick_offsets(struct pyproc *out, char *err, size_t errlen)
{
	const struct py_offsets *t;
	char why[256] = "";

	if (out->major > 3 || (out->major == 3 && out->minor >= 13)) {
		uint8_t buf[PY_DEBUG_OFFSETS_READ];
		uint64_t hex = 0;

		if (mem_read(out->pid, out->runtime_addr, buf, sizeof(buf)) == 0 &&
		    py_debug_offsets_parse(buf, sizeof(buf), &out->off, &hex, why, sizeof(why)) == 0) {
			out->debug_offsets = true;
			return PYPROC_OK;
		}
	}
	/* The target published debug offsets we refused (e.g. a free-threaded
	 * build): the table, made for the default build, would misread it. */
	t = why[0] ? NULL : py_offsets_for_version(out->major, out->minor);
	if (t) {
		out->off = *t;
		return PYPROC_OK;
	}
	set_err(err, errlen,
		"pid %d: unsupported Python %d.%d (%s)%s%s: supported are 3.8 to 3.15",
		out->pid, out->major, out->minor, out->binary, why[0] ? ": " : "", why);
	return PYPROC_UNSUPPORTED;
}

static enum pyproc_status inspect_maps(int pid, const struct proc_maps *maps, const char *exe,
				       struct pyproc *out, char *err, size_t errlen)
{
	const struct proc_map *old_python = NULL, *unopened = NULL;
	int unopened_errno = 0;

	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];
		const struct elf_facts *f;
		uint64_t bias, ver = 0;

		if (!interesting(m, exe) || (i > 0 && maps->v[i - 1].inode == m->inode &&
					     maps->v[i - 1].path && !strcmp(maps->v[i - 1].path, m->path)))
			continue;
		errno = 0;
		f = elf_facts_for(pid, m);
		if (!f && errno != ENOMEM && strstr(procmaps_basename(m), "python") && !unopened) {
			unopened = m;
			unopened_errno = errno;
		}
		if (!f || !f->ok)
			continue;
		if (!f->sym[SYM_RUNTIME]) {
			if (f->sym[SYM_GETVERSION])
				old_python = m;
			continue;
		}
		if (!procmaps_file_path(pid, m, out->binary_file, sizeof(out->binary_file))) {
			set_err(err, errlen, "pid %d: cannot open %s: %s", pid, m->path,
				strerror(errno));
			return PYPROC_NOT_PYTHON;
		}
		if (elf_load_bias(out->binary_file, maps, m->path, &bias, err, errlen))
			return PYPROC_NOT_PYTHON;
		out->pid = pid;
		out->runtime_addr = f->sym[SYM_RUNTIME] + bias;
		/* A newborn's dynamic loader maps a library whole from its
		 * start first, and its writable segment over that after: read
		 * in between, the runtime's address shows other bytes of the
		 * file (no debug offsets; CI once refused a starting 3.13 so,
		 * for good).  Not yet, then. */
		if (!writable_at(maps, out->runtime_addr)) {
			set_err(err, errlen, "pid %d: %s is still being mapped", pid, m->path);
			return PYPROC_NOT_PYTHON;
		}
		/* all three or none: a type checked against a wrong address
		 * would make every name unreadable */
		if (f->sym[SYM_CODE_TYPE] && f->sym[SYM_STR_TYPE] && f->sym[SYM_BYTES_TYPE]) {
			out->types.code = f->sym[SYM_CODE_TYPE] + bias;
			out->types.str = f->sym[SYM_STR_TYPE] + bias;
			out->types.bytes = f->sym[SYM_BYTES_TYPE] + bias;
		}
		snprintf(out->binary, sizeof(out->binary), "%s", m->path);
		if (f->sym[SYM_VERSION] && mem_read(pid, f->sym[SYM_VERSION] + bias, &ver, 4) == 0 && ver) {
			out->major = (ver >> 24) & 0xff;
			out->minor = (ver >> 16) & 0xff;
		} else if (!version_from_name(procmaps_basename(m), &out->major, &out->minor)) {
			set_err(err, errlen, "pid %d: cannot tell the Python version of %s", pid, m->path);
			return PYPROC_UNSUPPORTED;
		}
		return pick_offsets(out, err, errlen);
	}
	if (old_python) {
		int major = 0, minor = 0;

		version_from_name(procmaps_basename(old_python), &major, &minor);
		set_err(err, errlen, "pid %d: unsupported Python %d.%d (%s): supported are 3.8 to 3.15",
			 pid, major, minor, old_python->path);
		return PYPROC_UNSUPPORTED;
	}
	if (unopened) { /* said, not passed over: it may well be a Python */
		set_err(err, errlen, "pid %d: cannot open the file it maps as %s: %s", pid,
			unopened->path, strerror(unopened_errno ? unopened_errno : ENOENT));
		return PYPROC_UNSUPPORTED;
	}
	set_err(err, errlen, "pid %d is not a CPython process", pid);
	return PYPROC_NOT_PYTHON;
}

enum pyproc_status pyproc_inspect(int pid, struct pyproc *out, char *err, size_t errlen)
{
	struct proc_maps maps = { 0 };
	char link[64], exe[PATH_MAX];
	ssize_t n;
	enum pyproc_status st;

	memset(out, 0, sizeof(*out));
	/* before the maps: an exec from here on shows as another image */
	if (procmaps_image(pid, &out->image) && kill(pid, 0) && errno == ESRCH) {
		set_err(err, errlen, "pid %d: no such process", pid);
		return PYPROC_GONE;
	}
	if (procmaps_read(pid, &maps, err, errlen)) {
		if (errno == ESRCH || errno == ENOENT) {
			set_err(err, errlen, "pid %d: no such process", pid);
			return PYPROC_GONE;
		}
		return PYPROC_NOT_PYTHON;
	}
	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		char *d = strstr(exe, " (deleted)");
		if (d && d[10] == 0)
			*d = 0;
	}
	st = inspect_maps(pid, &maps, n > 0 ? exe : NULL, out, err, errlen);
	procmaps_free(&maps);
	if (st == PYPROC_NOT_PYTHON && kill(pid, 0) && errno == ESRCH) {
		set_err(err, errlen, "pid %d: no such process", pid);
		return PYPROC_GONE;
	}
	return st;
}

static size_t read_small_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		n = 0;
	buf[n] = 0;
	return (size_t)n;
}

void proc_comm(int pid, char *buf, size_t len)
{
	char path[64];
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	n = read_small_file(path, buf, len);
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = 0;
	if (!n)
		snprintf(buf, len, "?");
}

void proc_cmdline(int pid, char *buf, size_t len)
{
	char path[64];
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	n = read_small_file(path, buf, len);
	while (n > 0 && buf[n - 1] == 0)
		n--;
	for (size_t i = 0; i < n; i++)
		if (buf[i] == 0 || buf[i] == '\n')
			buf[i] = ' ';
	buf[n] = 0;
}
