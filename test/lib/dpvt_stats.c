/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A counter of the engine's published statistics (lib/port/dpv_stats.h:
 * the snapshot dpv_stat reads), as a black-box test sees it: the snapshot
 * of this process, or of dpverbsd in shared mode (DPV_DAEMON_PID, set by
 * test/shared/with_daemon.sh), read after a whole refresh that began after
 * the call.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dpv_stats.h"
#include "dpvt_verbs.h"

uint64_t dpvt_stat(bool drop, const char *name)
{
	char path[64];
	const char *d = getenv("DPV_DAEMON_PID");
	snprintf(path, sizeof(path), DPV_STATS_PREFIX "%d", d && *d ? atoi(d) : (int)getpid());
	const struct dpv_stats_shm *s = MAP_FAILED;
	for (int i = 0; i < 300 && s == MAP_FAILED; i++) {
		int fd = open(path, O_RDONLY);
		if (fd >= 0) {
			s = mmap(NULL, sizeof(*s), PROT_READ, MAP_SHARED, fd, 0);
			close(fd);
		}
		if (s == MAP_FAILED)
			usleep(10000);
	}
	if (s == MAP_FAILED)
		return UINT64_MAX;
	/* two seq steps past the current one: a whole refresh after now */
	uint64_t seq0 = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
	for (int i = 0; i < 300 && __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) < (seq0 | 1) + 3; i++)
		usleep(10000);
	uint64_t sum = UINT64_MAX, seq;
	do {
		while ((seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE)) & 1)
			usleep(1000);
		uint32_t n = drop ? s->n_drop : s->n_cnt;
		for (uint32_t i = 0; i < n && i < DPV_STATS_MAX_CNT; i++) {
			if (strcmp(drop ? s->drop_names[i] : s->cnt_names[i], name) != 0)
				continue;
			sum = 0;
			for (uint32_t p = 0; p < s->n_ports && p < DPV_MAX_PORTS; p++)
				sum += drop ? s->ports[p].drop[i] : s->ports[p].cnt[i];
		}
	} while (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != seq);
	munmap((void *)s, sizeof(*s));
	return sum;
}

uint64_t dpvt_stat_wait(bool drop, const char *name, uint64_t want)
{
	uint64_t v = 0;
	for (int i = 0; i < 30; i++) {
		v = dpvt_stat(drop, name);
		if (v != UINT64_MAX && v >= want)
			break;
	}
	return v;
}
