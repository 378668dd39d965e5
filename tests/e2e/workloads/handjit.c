/* handjit.c - a hand-made JIT: copies two tiny loops into anonymous
 * executable memory and calls them, as oneDNN or numba call their kernels.
 * One keeps a frame pointer (push rbp; mov rbp, rsp); the other uses rbp
 * for data, as xbyak's kernels do, so only a scan of the stack finds its
 * caller.  Built by the test (-fno-omit-frame-pointer: the callers keep a
 * frame pointer chain) into a library that handjit.py loads with ctypes. */
#include <string.h>
#include <sys/mman.h>
#include <time.h>

typedef void (*kernel)(long);

static const unsigned char with_fp[] = {
	0x55,                   /* push rbp */
	0x48, 0x89, 0xe5,       /* mov rbp, rsp */
	0x48, 0x89, 0xf9,       /* mov rcx, rdi */
	0x48, 0xff, 0xc9,       /* 1: dec rcx */
	0x75, 0xfb,             /* jne 1b */
	0x5d,                   /* pop rbp */
	0xc3,                   /* ret */
};

static const unsigned char without_fp[] = {
	0x55,                   /* push rbp */
	0x57, 0x57, 0x57,       /* push rdi x3: a frame of data words */
	0x48, 0x89, 0xfd,       /* mov rbp, rdi: rbp holds data */
	0x48, 0x89, 0xf9,       /* mov rcx, rdi */
	0x48, 0xff, 0xc9,       /* 1: dec rcx */
	0x75, 0xfb,             /* jne 1b */
	0x5f, 0x5f, 0x5f,       /* pop rdi x3 */
	0x5d,                   /* pop rbp */
	0xc3,                   /* ret */
};

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static kernel load(const unsigned char *code, size_t len)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memcpy(p, code, len);
	return (kernel)p;
}

static int spin(const unsigned char *code, size_t len, double seconds)
{
	kernel k = load(code, len);
	double end = thread_cpu_s() + seconds;

	if (!k)
		return -1;
	while (thread_cpu_s() < end)
		k(1000000);
	return 0;
}

__attribute__((noinline)) int spin_fp(double seconds)
{
	return spin(with_fp, sizeof(with_fp), seconds);
}

__attribute__((noinline)) int spin_nofp(double seconds)
{
	return spin(without_fp, sizeof(without_fp), seconds);
}
