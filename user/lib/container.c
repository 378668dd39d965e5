/* container.c - a process's container from its cgroup path (container.h). */
#include "container.h"

#include <stdio.h>
#include <string.h>

#define ID_LEN 64
#define UID_LEN 36

static bool all_of(const char *s, size_t n, const char *set)
{
	for (size_t i = 0; i < n; i++)
		if (!s[i] || !strchr(set, s[i]))
			return false;
	return true;
}

static bool is_id(const char *s, size_t n)
{
	return n == ID_LEN && all_of(s, n, "0123456789abcdef");
}

static bool has_suffix(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && !memcmp(s + n - k, suffix, k);
}

/* "podUID" or "...-podUID" (systemd's spelling, '_' for '-') ending seg */
static bool take_pod(const char *seg, size_t n, char *out)
{
	const char *uid = seg + n - UID_LEN;

	if (n < UID_LEN + 3 || memcmp(uid - 3, "pod", 3) || (n > UID_LEN + 3 && uid[-4] != '-') ||
	    !all_of(uid, UID_LEN, "0123456789abcdef-_"))
		return false;
	for (size_t i = 0; i < UID_LEN; i++)
		out[i] = uid[i] == '_' ? '-' : uid[i];
	out[UID_LEN] = 0;
	return true;
}

static const struct {
	const char *prefix, *engine;
} scopes[] = {
	{ "docker-", "docker" },
	{ "cri-containerd-", "containerd" },
	{ "crio-", "cri-o" },
	{ "libpod-", "podman" },
};

bool container_of_cgroup(const char *path, struct container *out)
{
	const char *engine = NULL; /* of a bare id: the tree it sits in */

	memset(out, 0, sizeof(*out));
	for (const char *seg = path; seg && *seg;) {
		const char *end = strchr(seg, '/');
		size_t n = end ? (size_t)(end - seg) : strlen(seg);

		if (has_suffix(seg, n, ".scope"))
			n -= 6;
		else if (has_suffix(seg, n, ".slice"))
			n -= 6;
		if (n == 6 && !memcmp(seg, "docker", 6))
			engine = "docker";
		else if (n >= 8 && !memcmp(seg, "kubepods", 8) && !engine)
			engine = "kubernetes";
		take_pod(seg, n, out->pod);
		if (is_id(seg, n) && engine) {
			snprintf(out->engine, sizeof(out->engine), "%s", engine);
			memcpy(out->id, seg, ID_LEN);
			out->id[ID_LEN] = 0;
		}
		for (size_t i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++) {
			size_t k = strlen(scopes[i].prefix);

			if (n > k && !memcmp(seg, scopes[i].prefix, k) && is_id(seg + k, n - k)) {
				snprintf(out->engine, sizeof(out->engine), "%s", scopes[i].engine);
				memcpy(out->id, seg + k, ID_LEN);
				out->id[ID_LEN] = 0;
			}
		}
		seg = end ? end + 1 : NULL;
	}
	if (!out->id[0])
		out->pod[0] = 0; /* a pod's own cgroup (its pause process) */
	return out->id[0] != 0;
}

bool container_of_pid(int pid, struct container *out)
{
	char path[64], line[4096];
	bool found = false;
	FILE *f;

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	/* "HIERARCHY:CONTROLLERS:PATH" per line; the unified one is "0::PATH" */
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ':');

		p = p ? strchr(p + 1, ':') : NULL;
		if (!p)
			continue;
		line[strcspn(line, "\n")] = 0;
		found = container_of_cgroup(p + 1, out);
	}
	fclose(f);
	return found;
}
