/* container.h - which container a process runs in, from its cgroup path.
 *
 * Container engines put each container in a cgroup whose path carries the
 * container's id, in one of a few spellings: docker's "/docker/ID" or
 * "docker-ID.scope", containerd's "cri-containerd-ID.scope", cri-o's
 * "crio-ID.scope", podman's "libpod-ID.scope" or "/libpod_parent/libpod-ID",
 * and under Kubernetes a pod's cgroup "podUID" or
 * "kubepods-QOS-podUID.slice" (the UID's dashes made underscores) above the
 * container's, whose id may stand alone ("/kubepods/burstable/podUID/ID").
 * ID is 64 hex digits.  Library code: no output, no exit. */
#ifndef PYPERF_CONTAINER_H
#define PYPERF_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>

struct container {
	char engine[16];         /* "docker", "containerd", "cri-o", "podman", "kubernetes" */
	char id[65];             /* 64 hex digits */
	char pod[37];            /* the Kubernetes pod's UID, "" if none */
};

/* The container of a cgroup path (a line's path of /proc/PID/cgroup): true
 * and *out filled when the path names one. */
bool container_of_cgroup(const char *path, struct container *out);

/* The container of process pid, from its /proc/PID/cgroup (the first
 * line that names one); false when it is in none or it cannot be read. */
bool container_of_pid(int pid, struct container *out);

#endif
