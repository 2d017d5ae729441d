/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internal interface of the configuration loader: the parse context, the
 * JSON accessors with their messages (dpv_conf_json.c) and the port parser
 * (dpv_conf_port.c). Every accessor reports through conf_fail(), which
 * writes "SOURCE: JSON.PATH: REASON" into the caller's buffer and returns -1.
 */
#ifndef DPV_CONF_PRIV_H
#define DPV_CONF_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "dpv_conf.h"

#define CONF_FILE_MAX (4u << 20)  /* refuse larger configuration files */
#define CONF_PATH_LEN 256         /* JSON path in messages */
#define CONF_REPR_LEN 64          /* "(got ...)" excerpt */
#define CONF_EAL_ARG_MAX 4096

/* One parse: where the text came from, where messages go, what is filled. */
struct ctx {
	const char *src;
	char *err;
	size_t errlen;
	struct dpv_conf *c;
};

struct pci_addr {
	unsigned long dom, bus, dev, fn;
};

int conf_fail(struct ctx *x, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A short JSON rendering of a value for "(got ...)". */
const char *conf_repr(const json_t *v, char *buf);
#define REPR(v) conf_repr((v), (char[CONF_REPR_LEN]){0})

void conf_pjoin(char *out, const char *base, const char *key);
void conf_pidx(char *out, const char *base, size_t i);
int conf_check_keys(struct ctx *x, json_t *obj, const char *path,
		    const char *const *allowed, const char *qualifier);
int conf_missing(struct ctx *x, const char *path, const char *key);
int conf_get_int(struct ctx *x, json_t *obj, const char *path, const char *key,
		 long long lo, long long hi, bool pow2, long long *out);
int conf_get_u32(struct ctx *x, json_t *obj, const char *path, const char *key,
		 long long lo, long long hi, uint32_t *out);
int conf_get_u16(struct ctx *x, json_t *obj, const char *path, const char *key,
		 long long lo, long long hi, bool pow2, uint16_t *out);
int conf_get_prob(struct ctx *x, json_t *obj, const char *path, const char *key,
		  double *out);
int conf_get_bool(struct ctx *x, json_t *obj, const char *path, const char *key,
		  bool *out);
int conf_get_str(struct ctx *x, json_t *obj, const char *path, const char *key,
		 const char **out);
int conf_get_enum(struct ctx *x, json_t *obj, const char *path, const char *key,
		  const char *const *names, int *out);
int conf_get_obj(struct ctx *x, json_t *obj, const char *path, const char *key,
		 json_t **out);
bool conf_name_ok(const char *s, const char *extra_upper);
size_t conf_pci_parse(const char *s, bool full, struct pci_addr *a);
bool conf_mac_parse(const char *s, uint8_t mac[6]);
int conf_split_prefix(const char *s, char *buf, size_t buflen, int max);
bool conf_no_space(const char *s);

/* ports[]: every port, then the cross-port checks (unique names, peers). */
int conf_parse_ports(struct ctx *x, json_t *root);

#endif /* DPV_CONF_PRIV_H */
