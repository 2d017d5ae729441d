/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Regions: memory this process shares with dpverbsd. Each is a memfd
 * (hugetlbfs-backed when asked and available), sealed so that it can never
 * shrink under the daemon's mapping, mapped here and handed to the daemon
 * (MEM_ADD), which maps it as well. Rings live in them; so do the hugepage
 * allocator's buffers, which makes MRs on those buffers direct (no
 * process_vm_readv/writev in the engine).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "remote.h"

#ifndef MFD_HUGETLB
#define MFD_HUGETLB 0x0004U
#endif

#define HUGE_2M (2u << 20)

struct region {
	void *p;
	size_t size;
	bool huge;
	struct region *next;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct region *g_regions;

static int region_fd(size_t size, bool huge)
{
	int fd = memfd_create("dpverbs-region", MFD_CLOEXEC | MFD_ALLOW_SEALING | (huge ? MFD_HUGETLB : 0));
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

void *rm_mem_alloc(size_t size, bool huge)
{
	size_t page = huge ? HUGE_2M : 4096;
	size_t bytes = RTE_ALIGN_CEIL(RTE_MAX(size, (size_t)1), page);
	int fd = region_fd(bytes, huge);
	if (fd < 0 && huge) { /* no hugepages to spare: ordinary pages */
		huge = false;
		bytes = RTE_ALIGN_CEIL(RTE_MAX(size, (size_t)1), 4096);
		fd = region_fd(bytes, false);
	}
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	struct region *r = calloc(1, sizeof(*r));
	void *p = r ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0) : MAP_FAILED;
	if (p == MAP_FAILED) {
		close(fd);
		free(r);
		errno = ENOMEM;
		return NULL;
	}
	struct dpv_shm_mem m = {.addr = (uintptr_t)p, .size = bytes};
	int e = rm_call(DPV_SHM_MEM_ADD, &m, &fd, 1, NULL);
	close(fd);
	if (e) {
		munmap(p, bytes);
		free(r);
		errno = e == -EIO ? EIO : ENOMEM;
		return NULL;
	}
	r->p = p;
	r->size = bytes;
	r->huge = huge;
	pthread_mutex_lock(&g_lock);
	r->next = g_regions;
	g_regions = r;
	pthread_mutex_unlock(&g_lock);
	return p;
}

int rm_mem_is_huge(const void *p)
{
	const uint8_t *a = p;
	int r = 0;
	pthread_mutex_lock(&g_lock);
	for (struct region *g = g_regions; g; g = g->next)
		if (a >= (uint8_t *)g->p && a < (uint8_t *)g->p + g->size) {
			r = g->huge;
			break;
		}
	pthread_mutex_unlock(&g_lock);
	return r;
}

void rm_mem_free(void *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&g_lock);
	struct region **pp = &g_regions, *r = NULL;
	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->p == p) {
			r = *pp;
			*pp = r->next;
			break;
		}
	pthread_mutex_unlock(&g_lock);
	if (!r)
		return;
	struct dpv_shm_mem m = {.addr = (uintptr_t)p, .size = r->size};
	rm_call(DPV_SHM_MEM_DEL, &m, NULL, 0, NULL); /* a dead daemon unmapped it already */
	munmap(r->p, r->size);
	free(r);
}

void rm_mem_forget(void)
{
	pthread_mutex_init(&g_lock, NULL);
	g_regions = NULL;
}
