/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Configuration loader, JSON side: typed accessors that validate one field
 * each and name it in the message, and the small text parsers (names, MAC,
 * PCI addresses, prefixes) the field parsers share.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "dpv_conf_priv.h"

/* ------------------------------------------------------------------ */
/* error reporting                                                     */

int conf_fail(struct ctx *x, const char *path, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (x->err == NULL || x->errlen == 0)
		return -1;
	n = snprintf(x->err, x->errlen, "%s: %s: ", x->src, path);
	if (n < 0 || (size_t)n >= x->errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(x->err + n, x->errlen - n, fmt, ap);
	va_end(ap);
	return -1;
}

/* A short JSON rendering of a value for "(got ...)". */
const char *conf_repr(const json_t *v, char *buf)
{
	char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_ENSURE_ASCII |
			     JSON_REAL_PRECISION(15));
	size_t len;

	if (s == NULL) {
		snprintf(buf, CONF_REPR_LEN, "?");
		return buf;
	}
	len = strlen(s);
	if (len >= CONF_REPR_LEN) {
		memcpy(buf, s, CONF_REPR_LEN - 4);
		memcpy(buf + CONF_REPR_LEN - 4, "...", 4);
	} else {
		memcpy(buf, s, len + 1);
	}
	free(s);
	return buf;
}

void conf_pjoin(char *out, const char *base, const char *key)
{
	if (*base)
		snprintf(out, CONF_PATH_LEN, "%.120s.%.120s", base, key);
	else
		snprintf(out, CONF_PATH_LEN, "%.120s", key);
}

void conf_pidx(char *out, const char *base, size_t i)
{
	snprintf(out, CONF_PATH_LEN, "%.200s[%zu]", base, i);
}

/* ------------------------------------------------------------------ */
/* generic field access                                                */

int conf_check_keys(struct ctx *x, json_t *obj, const char *path,
		    const char *const *allowed, const char *qualifier)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v) {
		char list[512] = "", p[CONF_PATH_LEN];
		size_t i, n = 0;
		bool ok = false;

		for (i = 0; allowed[i]; i++)
			if (strcmp(key, allowed[i]) == 0)
				ok = true;
		if (ok)
			continue;
		for (i = 0; allowed[i]; i++)
			n += snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "",
				      allowed[i]);
		conf_pjoin(p, path, key);
		return conf_fail(x, p, "unknown field%s (expected one of: %s)",
				 qualifier ? qualifier : "", list);
	}
	return 0;
}

int conf_missing(struct ctx *x, const char *path, const char *key)
{
	char p[CONF_PATH_LEN];

	conf_pjoin(p, path, key);
	return conf_fail(x, p, "required field is missing");
}

/* Returns 1 if present and valid, 0 if absent, -1 on error. */
int conf_get_int(struct ctx *x, json_t *obj, const char *path, const char *key,
		 long long lo, long long hi, bool pow2, long long *out)
{
	json_t *v = json_object_get(obj, key);
	char p[CONF_PATH_LEN];
	long long n;

	if (v == NULL)
		return 0;
	conf_pjoin(p, path, key);
	n = json_is_integer(v) ? (long long)json_integer_value(v) : 0;
	if (!json_is_integer(v) || n < lo || n > hi || (pow2 && (n & (n - 1)) != 0)) {
		if (pow2)
			return conf_fail(x, p, "must be a power of two between %lld and %lld (got %s)",
					 lo, hi, REPR(v));
		return conf_fail(x, p, "must be an integer between %lld and %lld (got %s)", lo, hi,
				 REPR(v));
	}
	*out = n;
	return 1;
}

int conf_get_u32(struct ctx *x, json_t *obj, const char *path, const char *key,
		 long long lo, long long hi, uint32_t *out)
{
	long long n;
	int r = conf_get_int(x, obj, path, key, lo, hi, false, &n);

	if (r == 1)
		*out = (uint32_t)n;
	return r;
}

int conf_get_u16(struct ctx *x, json_t *obj, const char *path, const char *key,
		 long long lo, long long hi, bool pow2, uint16_t *out)
{
	long long n;
	int r = conf_get_int(x, obj, path, key, lo, hi, pow2, &n);

	if (r == 1)
		*out = (uint16_t)n;
	return r;
}

int conf_get_prob(struct ctx *x, json_t *obj, const char *path, const char *key,
		  double *out)
{
	json_t *v = json_object_get(obj, key);
	char p[CONF_PATH_LEN];
	double d;

	if (v == NULL)
		return 0;
	conf_pjoin(p, path, key);
	d = json_is_number(v) ? json_number_value(v) : -1.0;
	if (!json_is_number(v) || !(d >= 0.0 && d <= 1.0))
		return conf_fail(x, p, "must be a number between 0 and 1 (got %s)", REPR(v));
	*out = d;
	return 1;
}

int conf_get_bool(struct ctx *x, json_t *obj, const char *path, const char *key,
		  bool *out)
{
	json_t *v = json_object_get(obj, key);
	char p[CONF_PATH_LEN];

	if (v == NULL)
		return 0;
	conf_pjoin(p, path, key);
	if (!json_is_boolean(v))
		return conf_fail(x, p, "must be true or false (got %s)", REPR(v));
	*out = json_is_true(v);
	return 1;
}

int conf_get_str(struct ctx *x, json_t *obj, const char *path, const char *key,
		 const char **out)
{
	json_t *v = json_object_get(obj, key);
	char p[CONF_PATH_LEN];

	if (v == NULL)
		return 0;
	conf_pjoin(p, path, key);
	if (!json_is_string(v))
		return conf_fail(x, p, "must be a string (got %s)", REPR(v));
	*out = json_string_value(v);
	return 1;
}

/* A string out of a fixed list: *out gets the index. */
int conf_get_enum(struct ctx *x, json_t *obj, const char *path, const char *key,
		  const char *const *names, int *out)
{
	json_t *v = json_object_get(obj, key);
	char p[CONF_PATH_LEN], list[256] = "";
	size_t n = 0;
	int i, cnt;

	if (v == NULL)
		return 0;
	if (json_is_string(v))
		for (i = 0; names[i]; i++)
			if (strcmp(json_string_value(v), names[i]) == 0) {
				*out = i;
				return 1;
			}
	for (cnt = 0; names[cnt]; cnt++)
		;
	for (i = 0; i < cnt; i++)
		n += snprintf(list + n, sizeof(list) - n, "%s\"%s\"",
			      i == 0 ? "" : (i == cnt - 1 ? " or " : ", "), names[i]);
	conf_pjoin(p, path, key);
	return conf_fail(x, p, "must be %s (got %s)", list, REPR(v));
}

int conf_get_obj(struct ctx *x, json_t *obj, const char *path, const char *key,
		 json_t **out)
{
	json_t *v = json_object_get(obj, key);
	char p[CONF_PATH_LEN];

	if (v == NULL)
		return 0;
	conf_pjoin(p, path, key);
	if (!json_is_object(v))
		return conf_fail(x, p, "must be an object (got %s)", REPR(v));
	*out = v;
	return 1;
}

/* ------------------------------------------------------------------ */
/* syntax helpers                                                      */

bool conf_name_ok(const char *s, const char *extra_upper)
{
	size_t i, len = strlen(s);

	if (len == 0 || len >= DPV_NAME_MAX)
		return false;
	for (i = 0; i < len; i++) {
		char ch = s[i];

		if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_')
			continue;
		if (extra_upper && ((ch >= 'A' && ch <= 'Z') || strchr(extra_upper, ch)))
			continue;
		return false;
	}
	return true;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Reads exactly n hex digits (or between min and max) from *s. */
static bool hex_run(const char **s, int min, int max, unsigned long *out)
{
	unsigned long v = 0;
	int n = 0;

	while (n < max && hexval((*s)[n]) >= 0) {
		v = v * 16 + (unsigned long)hexval((*s)[n]);
		n++;
	}
	if (n < min || hexval((*s)[n]) >= 0)
		return false;
	*s += n;
	*out = v;
	return true;
}

/*
 * "DDDD:BB:DD.F" (domain of 4 to 8 hex digits) when full, or "BB:DD.F" when
 * !full. Returns the number of characters consumed, 0 if not an address.
 */
size_t conf_pci_parse(const char *s, bool full, struct pci_addr *a)
{
	const char *p = s;

	a->dom = 0;
	if (full) {
		if (!hex_run(&p, 4, 8, &a->dom) || *p++ != ':')
			return 0;
	}
	if (!hex_run(&p, 2, 2, &a->bus) || *p++ != ':')
		return 0;
	if (!hex_run(&p, 2, 2, &a->dev) || a->dev > 0x1f || *p++ != '.')
		return 0;
	if (*p < '0' || *p > '7')
		return 0;
	a->fn = (unsigned long)(*p++ - '0');
	return (size_t)(p - s);
}

bool conf_mac_parse(const char *s, uint8_t mac[6])
{
	int i;

	if (strlen(s) != 17)
		return false;
	for (i = 0; i < 6; i++) {
		int hi = hexval(s[3 * i]), lo = hexval(s[3 * i + 1]);

		if (hi < 0 || lo < 0 || (i < 5 && s[3 * i + 2] != ':'))
			return false;
		mac[i] = (uint8_t)(hi * 16 + lo);
	}
	return true;
}

/* Split "addr/prefix": copies addr into buf, returns the prefix or -1. */
int conf_split_prefix(const char *s, char *buf, size_t buflen, int max)
{
	const char *slash = strchr(s, '/');
	size_t alen;
	const char *q;
	int v = 0;

	if (slash == NULL || strchr(slash + 1, '/'))
		return -1;
	alen = (size_t)(slash - s);
	if (alen == 0 || alen >= buflen)
		return -1;
	memcpy(buf, s, alen);
	buf[alen] = '\0';
	q = slash + 1;
	if (*q == '\0' || strlen(q) > 3)
		return -1;
	for (; *q; q++) {
		if (*q < '0' || *q > '9')
			return -1;
		v = v * 10 + (*q - '0');
	}
	return v > max ? -2 : v;
}

bool conf_no_space(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == 0x7f)
			return false;
	return true;
}
