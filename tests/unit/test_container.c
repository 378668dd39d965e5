/* test_container.c - container ids and pod UIDs from the cgroup paths
 * docker, containerd, cri-o, podman and Kubernetes make (cgroupfs and
 * systemd drivers, cgroup v1 and v2), and the paths that name none. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "container.h"

#define ID "3f1e0c5b7a9d2e4f6a8b0c1d3e5f7a9b1c3d5e7f9a0b2c4d6e8f0a1b3c5d7e9f"
#define UID "0d1c2b3a-4f5e-6d7c-8b9a-0f1e2d3c4b5a"
#define UID_ "0d1c2b3a_4f5e_6d7c_8b9a_0f1e2d3c4b5a"

static void expect(const char *path, const char *engine, const char *id, const char *pod)
{
	struct container c;
	bool found = container_of_cgroup(path, &c);

	if (!engine) {
		if (found)
			fail_msg("%s: found %s %s", path, c.engine, c.id);
		return;
	}
	if (!found)
		fail_msg("%s: no container", path);
	assert_string_equal(c.engine, engine);
	assert_string_equal(c.id, id);
	assert_string_equal(c.pod, pod);
}

static void engines_and_drivers(void **state)
{
	(void)state;
	expect("/docker/" ID, "docker", ID, "");
	expect("/system.slice/docker-" ID ".scope", "docker", ID, "");
	expect("/machine.slice/libpod-" ID ".scope", "podman", ID, "");
	expect("/libpod_parent/libpod-" ID, "podman", ID, "");
	expect("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID ".scope",
	       "podman", ID, "");
	/* Kubernetes: systemd driver (containerd, cri-o), cgroupfs driver */
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
	       ".slice/cri-containerd-" ID ".scope", "containerd", ID, UID);
	expect("/kubepods.slice/kubepods-pod" UID_ ".slice/crio-" ID ".scope", "cri-o", ID, UID);
	expect("/kubepods/burstable/pod" UID "/" ID, "kubernetes", ID, UID);
	expect("/kubepods/pod" UID "/" ID, "kubernetes", ID, UID);
	/* docker in docker, a container inside a container: the innermost */
	expect("/docker/" ID "/docker/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	       "docker", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "");
}

static void paths_of_no_container(void **state)
{
	(void)state;
	expect("/", NULL, NULL, NULL);
	expect("", NULL, NULL, NULL);
	expect("/user.slice/user-0.slice/session-3.scope", NULL, NULL, NULL);
	expect("/system.slice/nginx.service", NULL, NULL, NULL);
	/* a bare id outside any engine's tree, short or not hex ids */
	expect("/" ID, NULL, NULL, NULL);
	expect("/docker/" "3f1e0c5b", NULL, NULL, NULL);
	expect("/system.slice/docker-" "3F1E0C5B7A9D2E4F6A8B0C1D3E5F7A9B1C3D5E7F9A0B2C4D6E8F0A1B3C5D7E9F"
	       ".scope", NULL, NULL, NULL);
	/* conmon, podman's and cri-o's monitor, beside the container */
	expect("/machine.slice/libpod-conmon-" ID ".scope", NULL, NULL, NULL);
	expect("/kubepods.slice/kubepods-pod" UID_ ".slice/crio-conmon-" ID ".scope", NULL, NULL,
	       NULL);
	/* a pod's own cgroup: no container in it */
	expect("/kubepods/burstable/pod" UID, NULL, NULL, NULL);
}

static void this_process(void **state)
{
	struct container c;

	(void)state;
	/* the tests do not run in a container; -1 is no process */
	assert_false(container_of_pid(getpid(), &c));
	assert_false(container_of_pid(-1, &c));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(engines_and_drivers),
		cmocka_unit_test(paths_of_no_container),
		cmocka_unit_test(this_process),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
