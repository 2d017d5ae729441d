/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpverbs configuration loader (jansson). The schema is documented in
 * config/README.md; every field is validated and unknown fields are
 * rejected. Messages have the form "SOURCE: JSON.PATH: REASON", or
 * "SOURCE:LINE:COLUMN: MESSAGE" for JSON syntax errors.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "dpv_conf.h"

#define CONF_FILE_MAX (4u << 20)  /* refuse larger configuration files */
#define CONF_PATH_LEN 256         /* JSON path in messages */
#define CONF_REPR_LEN 64          /* "(got ...)" excerpt */
#define CONF_EAL_ARG_MAX 4096

#define BUILTIN_SOURCE "<built-in default>"
#define ENV_NAME "DPVERBS_CONFIG"

static const char default_json[] =
	"{\n"
	"  \"mode\": \"embedded\",\n"
	"  \"progress\": \"inline\",\n"
	"  \"software_loopback\": true,\n"
	"  \"eal\": { \"hugepages\": true, \"memory_mb\": 0, \"log_level\": 4 },\n"
	"  \"ports\": [\n"
	"    { \"name\": \"dpv0\", \"device\": { \"type\": \"ring\", \"peer\": \"dpv1\" },\n"
	"      \"mac\": \"02:64:70:76:00:01\", \"ipv4\": \"192.0.2.1/24\", \"mtu\": 1500 },\n"
	"    { \"name\": \"dpv1\", \"device\": { \"type\": \"ring\", \"peer\": \"dpv0\" },\n"
	"      \"mac\": \"02:64:70:76:00:02\", \"ipv4\": \"192.0.2.2/24\", \"mtu\": 1500 }\n"
	"  ]\n"
	"}\n";

const char *dpv_conf_default_json(void)
{
	return default_json;
}

/* ------------------------------------------------------------------ */
/* error reporting                                                     */

struct ctx {
	const char *src;
	char *err;
	size_t errlen;
	struct dpv_conf *c;
};

static int fail(struct ctx *x, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct ctx *x, const char *path, const char *fmt, ...)
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

static void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* A short JSON rendering of a value for "(got ...)". */
static const char *repr(const json_t *v, char *buf)
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

#define REPR(v) repr((v), (char[CONF_REPR_LEN]){0})

static void pjoin(char *out, const char *base, const char *key)
{
	if (*base)
		snprintf(out, CONF_PATH_LEN, "%.120s.%.120s", base, key);
	else
		snprintf(out, CONF_PATH_LEN, "%.120s", key);
}

static void pidx(char *out, const char *base, size_t i)
{
	snprintf(out, CONF_PATH_LEN, "%.200s[%zu]", base, i);
}

/* ------------------------------------------------------------------ */
/* generic field access                                                */

static int check_keys(struct ctx *x, json_t *obj, const char *path,
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
		pjoin(p, path, key);
		return fail(x, p, "unknown field%s (expected one of: %s)",
			    qualifier ? qualifier : "", list);
	}
	return 0;
}

static int missing(struct ctx *x, const char *path, const char *key)
{
	char p[CONF_PATH_LEN];

	pjoin(p, path, key);
	return fail(x, p, "required field is missing");
}

/* Returns 1 if present and valid, 0 if absent, -1 on error. */
static int get_int(struct ctx *x, json_t *obj, const char *path, const char *key,
		   long long lo, long long hi, bool pow2, long long *out)
{
	json_t *v = json_object_get(obj, key);
	char p[CONF_PATH_LEN];
	long long n;

	if (v == NULL)
		return 0;
	pjoin(p, path, key);
	n = json_is_integer(v) ? (long long)json_integer_value(v) : 0;
	if (!json_is_integer(v) || n < lo || n > hi || (pow2 && (n & (n - 1)) != 0)) {
		if (pow2)
			return fail(x, p, "must be a power of two between %lld and %lld (got %s)",
				    lo, hi, REPR(v));
		return fail(x, p, "must be an integer between %lld and %lld (got %s)", lo, hi,
			    REPR(v));
	}
	*out = n;
	return 1;
}

static int get_u32(struct ctx *x, json_t *obj, const char *path, const char *key,
		   long long lo, long long hi, uint32_t *out)
{
	long long n;
	int r = get_int(x, obj, path, key, lo, hi, false, &n);

	if (r == 1)
		*out = (uint32_t)n;
	return r;
}

static int get_u16(struct ctx *x, json_t *obj, const char *path, const char *key,
		   long long lo, long long hi, bool pow2, uint16_t *out)
{
	long long n;
	int r = get_int(x, obj, path, key, lo, hi, pow2, &n);

	if (r == 1)
		*out = (uint16_t)n;
	return r;
}

static int get_prob(struct ctx *x, json_t *obj, const char *path, const char *key,
		    double *out)
{
	json_t *v = json_object_get(obj, key);
	char p[CONF_PATH_LEN];
	double d;

	if (v == NULL)
		return 0;
	pjoin(p, path, key);
	d = json_is_number(v) ? json_number_value(v) : -1.0;
	if (!json_is_number(v) || !(d >= 0.0 && d <= 1.0))
		return fail(x, p, "must be a number between 0 and 1 (got %s)", REPR(v));
	*out = d;
	return 1;
}

static int get_bool(struct ctx *x, json_t *obj, const char *path, const char *key,
		    bool *out)
{
	json_t *v = json_object_get(obj, key);
	char p[CONF_PATH_LEN];

	if (v == NULL)
		return 0;
	pjoin(p, path, key);
	if (!json_is_boolean(v))
		return fail(x, p, "must be true or false (got %s)", REPR(v));
	*out = json_is_true(v);
	return 1;
}

static int get_str(struct ctx *x, json_t *obj, const char *path, const char *key,
		   const char **out)
{
	json_t *v = json_object_get(obj, key);
	char p[CONF_PATH_LEN];

	if (v == NULL)
		return 0;
	pjoin(p, path, key);
	if (!json_is_string(v))
		return fail(x, p, "must be a string (got %s)", REPR(v));
	*out = json_string_value(v);
	return 1;
}

/* A string out of a fixed list: *out gets the index. */
static int get_enum(struct ctx *x, json_t *obj, const char *path, const char *key,
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
	pjoin(p, path, key);
	return fail(x, p, "must be %s (got %s)", list, REPR(v));
}

static int get_obj(struct ctx *x, json_t *obj, const char *path, const char *key,
		   json_t **out)
{
	json_t *v = json_object_get(obj, key);
	char p[CONF_PATH_LEN];

	if (v == NULL)
		return 0;
	pjoin(p, path, key);
	if (!json_is_object(v))
		return fail(x, p, "must be an object (got %s)", REPR(v));
	*out = v;
	return 1;
}

/* ------------------------------------------------------------------ */
/* syntax helpers                                                      */

static bool name_ok(const char *s, const char *extra_upper)
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

struct pci_addr {
	unsigned long dom, bus, dev, fn;
};

/*
 * "DDDD:BB:DD.F" (domain of 4 to 8 hex digits) when full, or "BB:DD.F" when
 * !full. Returns the number of characters consumed, 0 if not an address.
 */
static size_t pci_parse(const char *s, bool full, struct pci_addr *a)
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

static bool mac_parse(const char *s, uint8_t mac[6])
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
static int split_prefix(const char *s, char *buf, size_t buflen, int max)
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

static bool no_space(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == 0x7f)
			return false;
	return true;
}

/* ------------------------------------------------------------------ */
/* EAL                                                                 */

struct forbidden {
	const char *opt;   /* long "--x" or short "-x" */
	const char *hint;
};

static const char hint_dev[] = "declare devices in ports[] instead";

static const struct forbidden eal_forbidden[] = {
	{ "--vdev", hint_dev },
	{ "--allow", hint_dev },
	{ "--block", hint_dev },
	{ "--pci-whitelist", hint_dev },
	{ "--pci-blacklist", hint_dev },
	{ "-a", hint_dev },
	{ "-b", hint_dev },
	{ "-w", hint_dev },
	{ "--file-prefix", "use eal.file_prefix instead" },
	{ "--no-huge", "use eal.hugepages instead" },
	{ "--socket-mem", "use eal.memory_mb instead" },
	{ "-m", "use eal.memory_mb instead" },
};

static const char *eal_arg_forbidden(const char *arg)
{
	size_t i;

	for (i = 0; i < sizeof(eal_forbidden) / sizeof(eal_forbidden[0]); i++) {
		const char *opt = eal_forbidden[i].opt;

		if (opt[1] != '-') {
			/* short option, value attached or not: "-a", "-a0000:..." */
			if (arg[0] == '-' && arg[1] == opt[1])
				return eal_forbidden[i].hint;
		} else if (arg[0] == '-' && arg[1] == '-') {
			/* long option or an unambiguous abbreviation of it (getopt_long) */
			size_t n = strcspn(arg, "=");

			if (n > 2 && n <= strlen(opt) && strncmp(arg, opt, n) == 0)
				return eal_forbidden[i].hint;
		}
	}
	return NULL;
}

static int parse_eal(struct ctx *x, json_t *eal)
{
	static const char *const keys[] = { "args", "file_prefix", "hugepages", "memory_mb",
					    "log_level", "telemetry", NULL };
	struct dpv_conf *c = x->c;
	const char *path = "eal", *s;
	json_t *args;
	long long n;
	int r;

	if (check_keys(x, eal, path, keys, NULL))
		return -1;
	args = json_object_get(eal, "args");
	if (args != NULL) {
		size_t i;
		json_t *a;

		if (!json_is_array(args))
			return fail(x, "eal.args", "must be an array of strings (got %s)",
				    REPR(args));
		if (json_array_size(args) > DPV_MAX_EAL_ARGS)
			return fail(x, "eal.args", "at most %d arguments (got %zu)",
				    DPV_MAX_EAL_ARGS, json_array_size(args));
		json_array_foreach(args, i, a) {
			char p[CONF_PATH_LEN];
			const char *hint;

			pidx(p, "eal.args", i);
			if (!json_is_string(a))
				return fail(x, p, "must be a string (got %s)", REPR(a));
			s = json_string_value(a);
			if (*s == '\0')
				return fail(x, p, "must not be empty");
			if (strlen(s) >= CONF_EAL_ARG_MAX)
				return fail(x, p, "must be shorter than %d characters",
					    CONF_EAL_ARG_MAX);
			hint = eal_arg_forbidden(s);
			if (hint)
				return fail(x, p, "%s is not allowed: %s", REPR(a), hint);
			c->eal_args[c->n_eal_args] = strdup(s);
			if (c->eal_args[c->n_eal_args] == NULL)
				return fail(x, p, "out of memory");
			c->n_eal_args++;
		}
	}
	r = get_str(x, eal, path, "file_prefix", &s);
	if (r < 0)
		return -1;
	if (r == 1) {
		if (!name_ok(s, "-"))
			return fail(x, "eal.file_prefix",
				    "must be 1 to %d characters from [A-Za-z0-9_-] (got %s)",
				    DPV_NAME_MAX - 1, REPR(json_object_get(eal, "file_prefix")));
		snprintf(c->file_prefix, sizeof(c->file_prefix), "%s", s);
	}
	if (get_bool(x, eal, path, "hugepages", &c->huge) < 0)
		return -1;
	if (get_bool(x, eal, path, "telemetry", &c->telemetry) < 0)
		return -1;
	if (get_u32(x, eal, path, "memory_mb", 0, DPV_CONF_MAX_MEMORY_MB, &c->memory_mb) < 0)
		return -1;
	r = get_int(x, eal, path, "log_level", 0, DPV_CONF_MAX_LOG_LEVEL, false, &n);
	if (r < 0)
		return -1;
	if (r == 1)
		c->log_level = (int)n;
	return 0;
}

/* ------------------------------------------------------------------ */
/* ports                                                               */

/* Per-port facts kept for the cross-port checks. */
struct port_aux {
	char dev_id[DPV_DEVARGS_MAX + 8]; /* "vdev:NAME", "pci:DDDD:BB:DD.F", "ring:NAME" */
};

static int parse_device(struct ctx *x, json_t *dev, const char *path,
			struct dpv_conf_port *p, struct port_aux *aux)
{
	static const char *const types[] = { "ring", "vdev", "pci", NULL };
	static const char *const k_ring[] = { "type", "peer", NULL };
	static const char *const k_vdev[] = { "type", "args", NULL };
	static const char *const k_pci[] = { "type", "address", "args", NULL };
	char fp[CONF_PATH_LEN], q[64];
	const char *s;
	int t, r;

	r = get_enum(x, dev, path, "type", types, &t);
	if (r < 0)
		return -1;
	if (r == 0)
		return missing(x, path, "type");
	snprintf(q, sizeof(q), " for device type \"%s\"", types[t]);
	if (check_keys(x, dev, path, t == 0 ? k_ring : t == 1 ? k_vdev : k_pci, q))
		return -1;

	if (t == 0) {
		p->type = DPV_DEV_RING;
		r = get_str(x, dev, path, "peer", &s);
		if (r < 0)
			return -1;
		if (r == 0)
			return missing(x, path, "peer");
		pjoin(fp, path, "peer");
		if (!name_ok(s, NULL))
			return fail(x, fp, "must be a port name (got %s)",
				    REPR(json_object_get(dev, "peer")));
		snprintf(p->peer, sizeof(p->peer), "%s", s);
		snprintf(aux->dev_id, sizeof(aux->dev_id), "ring:%s", p->name);
	} else if (t == 1) {
		char name[DPV_DEVARGS_MAX];
		struct pci_addr a;
		size_t n;

		p->type = DPV_DEV_VDEV;
		r = get_str(x, dev, path, "args", &s);
		if (r < 0)
			return -1;
		if (r == 0)
			return missing(x, path, "args");
		pjoin(fp, path, "args");
		if (*s == '\0')
			return fail(x, fp, "must not be empty");
		if (strlen(s) >= DPV_DEVARGS_MAX)
			return fail(x, fp, "must be shorter than %d characters", DPV_DEVARGS_MAX);
		if (!no_space(s))
			return fail(x, fp, "must not contain spaces or control characters");
		if (pci_parse(s, true, &a) || pci_parse(s, false, &a))
			return fail(x, fp,
				    "starts with a PCI address: use \"type\": \"pci\" with "
				    "\"address\" instead (got %s)",
				    REPR(json_object_get(dev, "args")));
		/* the instance name before the first comma, e.g. "net_memif0" */
		n = strcspn(s, ",");
		memcpy(name, s, n);
		name[n] = '\0';
		if (!name_ok(name, ""))
			return fail(x, fp,
				    "must start with a device name such as \"net_memif0\" (got %s)",
				    REPR(json_object_get(dev, "args")));
		snprintf(aux->dev_id, sizeof(aux->dev_id), "vdev:%s", name);
		snprintf(p->devargs, sizeof(p->devargs), "%s", s);
	} else {
		struct pci_addr a;
		const char *args = NULL;
		size_t n;

		p->type = DPV_DEV_PCI;
		r = get_str(x, dev, path, "address", &s);
		if (r < 0)
			return -1;
		if (r == 0)
			return missing(x, path, "address");
		pjoin(fp, path, "address");
		n = pci_parse(s, true, &a);
		if (n == 0 || s[n] != '\0')
			return fail(x, fp, "must be a PCI address DDDD:BB:DD.F (got %s)",
				    REPR(json_object_get(dev, "address")));
		snprintf(aux->dev_id, sizeof(aux->dev_id), "pci:%04lx:%02lx:%02lx.%lx", a.dom, a.bus,
			 a.dev, a.fn);
		if (get_str(x, dev, path, "args", &args) < 0)
			return -1;
		pjoin(fp, path, "args");
		if (args && !no_space(args))
			return fail(x, fp, "must not contain spaces or control characters");
		if (args && *args) {
			if (strlen(s) + 1 + strlen(args) >= DPV_DEVARGS_MAX)
				return fail(x, fp, "must be shorter than %zu characters",
					    DPV_DEVARGS_MAX - 1 - strlen(s));
			size_t la = strlen(s);

			memcpy(p->devargs, s, la);
			p->devargs[la] = ',';
			memcpy(p->devargs + la + 1, args, strlen(args) + 1);
		} else {
			snprintf(p->devargs, sizeof(p->devargs), "%s", s);
		}
	}
	return 0;
}

static bool v4_unicast(uint32_t a)
{
	uint8_t o = (uint8_t)(a >> 24);

	return o != 0 && o != 127 && o < 224;
}

static int parse_ipv4(struct ctx *x, json_t *port, const char *path, struct dpv_conf_port *p)
{
	char fp[CONF_PATH_LEN], buf[INET_ADDRSTRLEN], net[INET_ADDRSTRLEN];
	const char *s;
	struct in_addr in, nin;
	uint32_t a, mask;
	int r, pfx;

	r = get_str(x, port, path, "ipv4", &s);
	if (r <= 0)
		return r;
	pjoin(fp, path, "ipv4");
	pfx = split_prefix(s, buf, sizeof(buf), 32);
	if (pfx == -1 || inet_pton(AF_INET, buf, &in) != 1)
		return fail(x, fp, "must be \"a.b.c.d/prefix\" (got %s)",
			    REPR(json_object_get(port, "ipv4")));
	if (pfx < 1)
		return fail(x, fp, "prefix length must be between 1 and 32 (got %s)",
			    REPR(json_object_get(port, "ipv4")));
	a = ntohl(in.s_addr);
	if (!v4_unicast(a))
		return fail(x, fp, "must be a unicast host address (got %s)",
			    REPR(json_object_get(port, "ipv4")));
	mask = pfx == 32 ? 0xffffffffu : ~(0xffffffffu >> pfx);
	nin.s_addr = htonl(a & mask);
	inet_ntop(AF_INET, &nin, net, sizeof(net));
	if (pfx <= 30 && (a & ~mask) == 0)
		return fail(x, fp, "%s is the network address of %s/%d", buf, net, pfx);
	if (pfx <= 30 && (a & ~mask) == ~mask)
		return fail(x, fp, "%s is the broadcast address of %s/%d", buf, net, pfx);
	p->ipv4 = in;
	p->ipv4_prefix = (uint8_t)pfx;
	return 1;
}

static int parse_ipv6(struct ctx *x, json_t *port, const char *path, struct dpv_conf_port *p)
{
	json_t *arr = json_object_get(port, "ipv6"), *v;
	char fp[CONF_PATH_LEN], ip[CONF_PATH_LEN];
	size_t i;

	if (arr == NULL)
		return 0;
	pjoin(fp, path, "ipv6");
	if (!json_is_array(arr))
		return fail(x, fp, "must be an array of \"address/prefix\" strings (got %s)",
			    REPR(arr));
	if (json_array_size(arr) > DPV_MAX_IPV6_PER_PORT)
		return fail(x, fp, "at most %d addresses (got %zu)", DPV_MAX_IPV6_PER_PORT,
			    json_array_size(arr));
	json_array_foreach(arr, i, v) {
		char buf[INET6_ADDRSTRLEN], net[INET6_ADDRSTRLEN];
		struct in6_addr in, nin;
		const uint8_t *b = in.s6_addr;
		bool host0 = true;
		int pfx, k;
		size_t j;

		pidx(ip, fp, i);
		if (!json_is_string(v))
			return fail(x, ip, "must be a string (got %s)", REPR(v));
		pfx = split_prefix(json_string_value(v), buf, sizeof(buf), 128);
		if (pfx == -1 || inet_pton(AF_INET6, buf, &in) != 1)
			return fail(x, ip, "must be \"address/prefix\" (got %s)", REPR(v));
		if (pfx < 1)
			return fail(x, ip, "prefix length must be between 1 and 128 (got %s)",
				    REPR(v));
		if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
			return fail(x, ip,
				    "link-local addresses cannot be configured: GID index 0 "
				    "is the port's link-local address (got %s)",
				    REPR(v));
		if (b[0] == 0xff || IN6_IS_ADDR_UNSPECIFIED(&in) || IN6_IS_ADDR_LOOPBACK(&in) ||
		    IN6_IS_ADDR_V4MAPPED(&in) || IN6_IS_ADDR_V4COMPAT(&in))
			return fail(x, ip, "must be a unicast global or unique-local address "
					   "(got %s)", REPR(v));
		nin = in;
		for (k = 0; k < 128; k++)
			if (k >= pfx && (b[k / 8] & (0x80 >> (k % 8)))) {
				host0 = false;
				nin.s6_addr[k / 8] &= (uint8_t)~(0x80 >> (k % 8));
			}
		if (pfx <= 126 && host0) {
			inet_ntop(AF_INET6, &nin, net, sizeof(net));
			return fail(x, ip, "%s is the subnet-router anycast address of %s/%d", buf,
				    net, pfx);
		}
		for (j = 0; j < p->n_ipv6; j++)
			if (memcmp(&p->ipv6[j].addr, &in, sizeof(in)) == 0) {
				inet_ntop(AF_INET6, &in, net, sizeof(net));
				return fail(x, ip, "address %s is listed twice (also %s[%zu])", net,
					    fp, j);
			}
		p->ipv6[p->n_ipv6].addr = in;
		p->ipv6[p->n_ipv6].prefix = (uint8_t)pfx;
		p->n_ipv6++;
	}
	return 1;
}

static int parse_lcores(struct ctx *x, json_t *port, const char *path, struct dpv_conf_port *p)
{
	json_t *arr = json_object_get(port, "lcores"), *v;
	char fp[CONF_PATH_LEN], ip[CONF_PATH_LEN];
	size_t i, j;

	pjoin(fp, path, "lcores");
	if (x->c->progress != DPV_PROGRESS_LCORE) {
		if (arr != NULL)
			return fail(x, fp, "only allowed with \"progress\": \"lcore\"");
		return 0;
	}
	if (arr == NULL)
		return fail(x, fp, "required field is missing (\"progress\" is \"lcore\": "
				   "list one lcore per queue)");
	if (!json_is_array(arr))
		return fail(x, fp, "must be an array of lcore ids (got %s)", REPR(arr));
	if (json_array_size(arr) != p->n_queues)
		return fail(x, fp, "must list exactly %u lcore(s), one per queue (got %zu)",
			    (unsigned int)p->n_queues, json_array_size(arr));
	json_array_foreach(arr, i, v) {
		long long n = json_is_integer(v) ? (long long)json_integer_value(v) : -1;

		pidx(ip, fp, i);
		if (!json_is_integer(v) || n < 0 || n > DPV_CONF_MAX_LCORE)
			return fail(x, ip, "must be an integer between 0 and %d (got %s)",
				    DPV_CONF_MAX_LCORE, REPR(v));
		for (j = 0; j < p->n_lcores; j++)
			if (p->lcores[j] == n)
				return fail(x, ip, "duplicate lcore %lld (also %s[%zu])", n, fp, j);
		p->lcores[p->n_lcores++] = (int)n;
	}
	return 1;
}

static void mac_str(const uint8_t *m, char *buf)
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

/* Checks port i against ports 0..i-1 (names, devices, MACs, addresses). */
static int check_unique(struct ctx *x, unsigned int i, const char *path, struct port_aux *aux)
{
	const struct dpv_conf_port *p = &x->c->ports[i];
	char fp[CONF_PATH_LEN], buf[INET6_ADDRSTRLEN];
	unsigned int j, k, l;

	for (j = 0; j < i; j++) {
		const struct dpv_conf_port *o = &x->c->ports[j];

		if (strcmp(p->name, o->name) == 0) {
			pjoin(fp, path, "name");
			return fail(x, fp, "duplicate port name \"%s\" (also ports[%u].name)",
				    p->name, j);
		}
	}
	for (j = 0; j < i; j++) {
		if (strcmp(aux[i].dev_id, aux[j].dev_id) == 0) {
			pjoin(fp, path, p->type == DPV_DEV_PCI ? "device.address" : "device.args");
			return fail(x, fp, "device %s is already used by ports[%u]",
				    strchr(aux[i].dev_id, ':') + 1, j);
		}
	}
	for (j = 0; j < i; j++) {
		const struct dpv_conf_port *o = &x->c->ports[j];

		if (p->mac_set && o->mac_set && memcmp(p->mac, o->mac, 6) == 0) {
			pjoin(fp, path, "mac");
			mac_str(p->mac, buf);
			return fail(x, fp, "MAC address %s is already used by ports[%u]", buf, j);
		}
	}
	for (j = 0; j < i; j++) {
		const struct dpv_conf_port *o = &x->c->ports[j];

		if (p->ipv4.s_addr != 0 && p->ipv4.s_addr == o->ipv4.s_addr) {
			pjoin(fp, path, "ipv4");
			inet_ntop(AF_INET, &p->ipv4, buf, sizeof(buf));
			return fail(x, fp, "address %s is already used by ports[%u]", buf, j);
		}
	}
	for (k = 0; k < p->n_ipv6; k++)
		for (j = 0; j < i; j++)
			for (l = 0; l < x->c->ports[j].n_ipv6; l++)
				if (memcmp(&p->ipv6[k].addr, &x->c->ports[j].ipv6[l].addr,
					   sizeof(struct in6_addr)) == 0) {
					char ip[CONF_PATH_LEN];

					pjoin(fp, path, "ipv6");
					pidx(ip, fp, k);
					inet_ntop(AF_INET6, &p->ipv6[k].addr, buf, sizeof(buf));
					return fail(x, ip, "address %s is already used by ports[%u]",
						    buf, j);
				}
	return 0;
}

static int parse_port(struct ctx *x, json_t *pj, unsigned int i, struct port_aux *aux)
{
	static const char *const keys[] = { "name", "device", "mac", "ipv4", "ipv6",
					    "mtu", "rx_desc", "tx_desc", "queues", "lcores",
					    "mbufs", NULL };
	struct dpv_conf_port *p = &x->c->ports[i];
	char path[CONF_PATH_LEN], fp[CONF_PATH_LEN], dpath[CONF_PATH_LEN];
	const char *s;
	json_t *dev;
	long long n;
	uint32_t need;
	int r;

	pidx(path, "ports", i);
	if (!json_is_object(pj))
		return fail(x, path, "must be an object (got %s)", REPR(pj));
	if (check_keys(x, pj, path, keys, NULL))
		return -1;

	p->mtu = DPV_CONF_DEF_MTU;
	p->rx_desc = DPV_CONF_DEF_DESC;
	p->tx_desc = DPV_CONF_DEF_DESC;
	p->n_queues = DPV_CONF_DEF_QUEUES;

	/* name */
	r = get_str(x, pj, path, "name", &s);
	if (r < 0)
		return -1;
	if (r == 0)
		return missing(x, path, "name");
	if (!name_ok(s, NULL)) {
		pjoin(fp, path, "name");
		return fail(x, fp, "must be 1 to %d characters from [a-z0-9_] (got %s)",
			    DPV_NAME_MAX - 1, REPR(json_object_get(pj, "name")));
	}
	snprintf(p->name, sizeof(p->name), "%s", s);

	/* device */
	dev = NULL;
	r = get_obj(x, pj, path, "device", &dev);
	if (r < 0)
		return -1;
	if (r == 0)
		return missing(x, path, "device");
	pjoin(dpath, path, "device");
	if (parse_device(x, dev, dpath, p, &aux[i]))
		return -1;

	/* mac */
	r = get_str(x, pj, path, "mac", &s);
	if (r < 0)
		return -1;
	if (r == 1) {
		static const uint8_t zero[6];

		pjoin(fp, path, "mac");
		if (!mac_parse(s, p->mac))
			return fail(x, fp, "must be a MAC address xx:xx:xx:xx:xx:xx (got %s)",
				    REPR(json_object_get(pj, "mac")));
		if (memcmp(p->mac, zero, 6) == 0)
			return fail(x, fp, "must not be all zeros");
		if (p->mac[0] & 1)
			return fail(x, fp, "must be a unicast address: the least significant "
					   "bit of the first octet must be 0 (got %s)",
				    REPR(json_object_get(pj, "mac")));
		p->mac_set = true;
	}

	if (parse_ipv4(x, pj, path, p) < 0 || parse_ipv6(x, pj, path, p) < 0)
		return -1;
	if (get_u16(x, pj, path, "mtu", DPV_CONF_MIN_MTU, DPV_CONF_MAX_MTU, false, &p->mtu) < 0)
		return -1;
	if (get_u16(x, pj, path, "rx_desc", DPV_CONF_MIN_DESC, DPV_CONF_MAX_DESC, true,
		    &p->rx_desc) < 0)
		return -1;
	if (get_u16(x, pj, path, "tx_desc", DPV_CONF_MIN_DESC, DPV_CONF_MAX_DESC, true,
		    &p->tx_desc) < 0)
		return -1;
	if (get_u16(x, pj, path, "queues", 1, DPV_MAX_QUEUES, false, &p->n_queues) < 0)
		return -1;
	if (parse_lcores(x, pj, path, p) < 0)
		return -1;

	/* mbufs: at least enough to fill every RX ring and every TX ring */
	need = (uint32_t)p->n_queues * ((uint32_t)p->rx_desc + p->tx_desc);
	r = get_int(x, pj, path, "mbufs", DPV_CONF_MIN_MBUFS, DPV_CONF_MAX_MBUFS, false, &n);
	if (r < 0)
		return -1;
	if (r == 1) {
		if (n < need) {
			pjoin(fp, path, "mbufs");
			return fail(x, fp,
				    "must be at least queues * (rx_desc + tx_desc) = %" PRIu32
				    " (got %lld)", need, n);
		}
		p->mbufs = (uint32_t)n;
	} else {
		/* default: 8191, or the next 2^k - 1 that covers the rings */
		p->mbufs = DPV_CONF_DEF_MBUFS;
		while (p->mbufs < need)
			p->mbufs = p->mbufs * 2 + 1;
	}
	return check_unique(x, i, path, aux);
}

/* Ring peers: must exist, differ from the port, and name each other. */
static int check_peers(struct ctx *x)
{
	struct dpv_conf *c = x->c;
	char fp[CONF_PATH_LEN];
	unsigned int i;

	for (i = 0; i < c->n_ports; i++) {
		const struct dpv_conf_port *p = &c->ports[i], *q;

		if (p->type != DPV_DEV_RING)
			continue;
		snprintf(fp, sizeof(fp), "ports[%u].device.peer", i);
		if (strcmp(p->peer, p->name) == 0)
			return fail(x, fp, "must name another port, not the port itself (got \"%s\")",
				    p->peer);
		q = dpv_conf_port_by_name(c, p->peer);
		if (q == NULL)
			return fail(x, fp, "no port is named \"%s\"", p->peer);
		if (q->type != DPV_DEV_RING)
			return fail(x, fp, "port \"%s\" is not a ring device", p->peer);
		if (strcmp(q->peer, p->name) != 0)
			return fail(x, fp,
				    "ring peers must name each other: port \"%s\" has peer \"%s\", "
				    "not \"%s\"",
				    q->name, q->peer, p->name);
	}
	return 0;
}

static int parse_ports(struct ctx *x, json_t *root)
{
	json_t *ports = json_object_get(root, "ports"), *pj;
	struct port_aux *aux;
	size_t i;
	int ret = 0;

	if (ports == NULL)
		return fail(x, "ports", "required field is missing (at least one port)");
	if (!json_is_array(ports))
		return fail(x, "ports", "must be an array of port objects (got %s)", REPR(ports));
	if (json_array_size(ports) == 0)
		return fail(x, "ports", "must contain at least one port");
	if (json_array_size(ports) > DPV_MAX_PORTS)
		return fail(x, "ports", "at most %d ports (got %zu)", DPV_MAX_PORTS,
			    json_array_size(ports));
	aux = calloc(DPV_MAX_PORTS, sizeof(*aux));
	if (aux == NULL)
		return fail(x, "ports", "out of memory");
	json_array_foreach(ports, i, pj) {
		if (parse_port(x, pj, (unsigned int)i, aux)) {
			ret = -1;
			break;
		}
		x->c->n_ports++;
	}
	free(aux);
	if (ret == 0)
		ret = check_peers(x);
	return ret;
}

/* ------------------------------------------------------------------ */
/* limits, fault, top level                                            */

static int parse_limits(struct ctx *x, json_t *lim)
{
	static const char *const keys[] = { "max_qp", "max_cq", "max_mr", "max_pd",
					    "max_ah", "max_srq", "max_qp_wr", "max_cqe",
					    "max_sge", "max_inline_data", "max_mr_size", NULL };
	struct dpv_conf *c = x->c;
	const char *path = "limits";
	long long n;
	int r;

	if (check_keys(x, lim, path, keys, NULL))
		return -1;
	if (get_u32(x, lim, path, "max_qp", 1, DPV_CONF_LIM_MAX_QP, &c->max_qp) < 0 ||
	    get_u32(x, lim, path, "max_cq", 1, DPV_CONF_LIM_MAX_CQ, &c->max_cq) < 0 ||
	    get_u32(x, lim, path, "max_mr", 1, DPV_CONF_LIM_MAX_MR, &c->max_mr) < 0 ||
	    get_u32(x, lim, path, "max_pd", 1, DPV_CONF_LIM_MAX_PD, &c->max_pd) < 0 ||
	    get_u32(x, lim, path, "max_ah", 1, DPV_CONF_LIM_MAX_AH, &c->max_ah) < 0 ||
	    get_u32(x, lim, path, "max_srq", 1, DPV_CONF_LIM_MAX_SRQ, &c->max_srq) < 0 ||
	    get_u32(x, lim, path, "max_qp_wr", 1, DPV_CONF_LIM_MAX_QP_WR, &c->max_qp_wr) < 0 ||
	    get_u32(x, lim, path, "max_cqe", 1, DPV_CONF_LIM_MAX_CQE, &c->max_cqe) < 0 ||
	    get_u32(x, lim, path, "max_sge", 1, DPV_CONF_LIM_MAX_SGE, &c->max_sge) < 0 ||
	    get_u32(x, lim, path, "max_inline_data", 0, DPV_CONF_LIM_MAX_INLINE,
		    &c->max_inline) < 0)
		return -1;
	r = get_int(x, lim, path, "max_mr_size", DPV_CONF_LIM_MIN_MR_SIZE,
		    (long long)DPV_CONF_LIM_MAX_MR_SIZE, false, &n);
	if (r < 0)
		return -1;
	if (r == 1)
		c->max_mr_size = (uint64_t)n;
	return 0;
}

static int parse_fault(struct ctx *x, json_t *f)
{
	static const char *const keys[] = { "drop", "duplicate", "reorder", "corrupt", "seed",
					    NULL };
	struct dpv_conf_fault *ft = &x->c->fault;
	const char *path = "fault";
	long long n;
	int r;

	if (check_keys(x, f, path, keys, NULL))
		return -1;
	if (get_prob(x, f, path, "drop", &ft->drop) < 0 ||
	    get_prob(x, f, path, "duplicate", &ft->duplicate) < 0 ||
	    get_prob(x, f, path, "reorder", &ft->reorder) < 0 ||
	    get_prob(x, f, path, "corrupt", &ft->corrupt) < 0)
		return -1;
	r = get_int(x, f, path, "seed", 0, INT64_MAX, false, &n);
	if (r < 0)
		return -1;
	if (r == 1)
		ft->seed = (uint64_t)n;
	return 0;
}

/* "log": {"pmd.dpv.sw": 8, "lib.dpv.*": 7}: levels of DPDK log types. */
static int parse_log(struct ctx *x, json_t *lg)
{
	struct dpv_conf *c = x->c;
	const char *key;
	json_t *v;
	long long n;

	json_object_foreach(lg, key, v) {
		char p[CONF_PATH_LEN];

		pjoin(p, "log", key);
		if (c->n_log >= DPV_CONF_MAX_LOG)
			return fail(x, p, "at most %d log types", DPV_CONF_MAX_LOG);
		if (!*key || strlen(key) >= DPV_NAME_MAX ||
		    strspn(key, "abcdefghijklmnopqrstuvwxyz0123456789._*") != strlen(key))
			return fail(x, p, "not a DPDK log type or pattern (letters, digits, '.', '_', '*')");
		if (get_int(x, lg, "log", key, 1, DPV_CONF_MAX_LOG_LEVEL, false, &n) < 0)
			return -1;
		snprintf(c->log[c->n_log].pattern, DPV_NAME_MAX, "%s", key);
		c->log[c->n_log].level = (int)n;
		c->n_log++;
	}
	return 0;
}

static void set_defaults(struct dpv_conf *c)
{
	snprintf(c->driver, sizeof(c->driver), "sw");
	c->mode = DPV_MODE_EMBEDDED;
	c->progress = DPV_PROGRESS_INLINE;
	c->sw_loopback = true;
	c->huge = true;
	c->telemetry = true;
	c->memory_mb = 0;
	c->log_level = DPV_CONF_DEF_LOG_LEVEL;
	c->max_qp = DPV_DEF_MAX_QP;
	c->max_cq = DPV_DEF_MAX_CQ;
	c->max_mr = DPV_DEF_MAX_MR;
	c->max_pd = DPV_DEF_MAX_PD;
	c->max_ah = DPV_DEF_MAX_AH;
	c->max_srq = DPV_DEF_MAX_SRQ;
	c->max_qp_wr = DPV_DEF_MAX_QP_WR;
	c->max_cqe = DPV_DEF_MAX_CQE;
	c->max_sge = DPV_DEF_MAX_SGE;
	c->max_inline = DPV_DEF_MAX_INLINE;
	c->max_mr_size = DPV_DEF_MAX_MR_SIZE;
	c->fault.seed = DPV_CONF_DEF_SEED;
}

static int parse_root(struct ctx *x, json_t *root)
{
	static const char *const keys[] = { "driver", "mode", "progress", "software_loopback", "eal",
					    "ports", "limits", "fault", "log", NULL };
	static const char *const drivers[] = { "sw", "null", NULL };
	static const char *const modes[] = { "embedded", "shared", NULL };
	static const char *const progs[] = { "inline", "lcore", NULL };
	struct dpv_conf *c = x->c;
	json_t *o;
	int v, r;

	if (!json_is_object(root))
		return fail(x, "(root)", "must be a JSON object (got %s)", REPR(root));
	if (check_keys(x, root, "", keys, NULL))
		return -1;
	set_defaults(c);
	r = get_enum(x, root, "", "driver", drivers, &v);
	if (r < 0)
		return -1;
	if (r == 1)
		snprintf(c->driver, sizeof(c->driver), "%s", drivers[v]);
	r = get_enum(x, root, "", "mode", modes, &v);
	if (r < 0)
		return -1;
	if (r == 1)
		c->mode = v == 0 ? DPV_MODE_EMBEDDED : DPV_MODE_SHARED;
	r = get_enum(x, root, "", "progress", progs, &v);
	if (r < 0)
		return -1;
	if (r == 1)
		c->progress = v == 0 ? DPV_PROGRESS_INLINE : DPV_PROGRESS_LCORE;
	if (get_bool(x, root, "", "software_loopback", &c->sw_loopback) < 0)
		return -1;
	o = NULL;
	r = get_obj(x, root, "", "eal", &o);
	if (r < 0 || (r == 1 && parse_eal(x, o) < 0))
		return -1;
	if (parse_ports(x, root) < 0)
		return -1;
	r = get_obj(x, root, "", "limits", &o);
	if (r < 0 || (r == 1 && parse_limits(x, o) < 0))
		return -1;
	r = get_obj(x, root, "", "fault", &o);
	if (r < 0 || (r == 1 && parse_fault(x, o) < 0))
		return -1;
	r = get_obj(x, root, "", "log", &o);
	if (r < 0 || (r == 1 && parse_log(x, o) < 0))
		return -1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* public API                                                          */

static int parse_buffer(const char *buf, size_t len, const char *source, struct dpv_conf *conf,
			char *err, size_t errlen)
{
	struct dpv_conf *t;
	json_error_t je;
	struct ctx x;
	json_t *root;
	int ret;

	if (source == NULL)
		source = "<string>";
	if (conf == NULL) {
		set_err(err, errlen, "%s: no configuration structure given", source);
		return -1;
	}
	memset(conf, 0, sizeof(*conf));
	if (buf == NULL) {
		set_err(err, errlen, "%s: no JSON text given", source);
		return -1;
	}
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (root == NULL) {
		if (je.line >= 0)
			set_err(err, errlen, "%s:%d:%d: %s", source, je.line, je.column, je.text);
		else
			set_err(err, errlen, "%s: %s", source, je.text);
		return -1;
	}
	/* parse into a scratch copy so that *conf is all zeros on failure */
	t = calloc(1, sizeof(*t));
	if (t == NULL) {
		json_decref(root);
		set_err(err, errlen, "%s: out of memory", source);
		return -1;
	}
	x.src = source;
	x.err = err;
	x.errlen = errlen;
	x.c = t;
	snprintf(t->source, sizeof(t->source), "%s", source);
	ret = parse_root(&x, root);
	json_decref(root);
	if (ret == 0)
		memcpy(conf, t, sizeof(*conf));
	else
		dpv_conf_free(t);
	free(t);
	if (ret == 0 && err != NULL && errlen > 0)
		err[0] = '\0';
	return ret;
}

int dpv_conf_parse_string(const char *json, const char *source, struct dpv_conf *conf,
			  char *err, size_t errlen)
{
	return parse_buffer(json, json ? strlen(json) : 0, source, conf, err, errlen);
}

int dpv_conf_load(const char *path, struct dpv_conf *conf, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	FILE *f;
	int ret;

	if (path == NULL) {
		const char *env = getenv(ENV_NAME);

		if (env != NULL && *env != '\0')
			path = env;
	}
	if (path == NULL)
		return dpv_conf_parse_string(default_json, BUILTIN_SOURCE, conf, err, errlen);
	if (conf != NULL)
		memset(conf, 0, sizeof(*conf));

	f = fopen(path, "rb");
	if (f == NULL) {
		set_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	for (;;) {
		size_t n;

		if (len == cap) {
			char *nb;

			if (cap >= CONF_FILE_MAX) {
				set_err(err, errlen, "%s: file is larger than %u bytes", path,
					CONF_FILE_MAX);
				goto fail;
			}
			cap = cap ? cap * 2 : 16384;
			nb = realloc(buf, cap);
			if (nb == NULL) {
				set_err(err, errlen, "%s: out of memory", path);
				goto fail;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0) {
			if (ferror(f)) {
				set_err(err, errlen, "%s: cannot read: %s", path, strerror(errno));
				goto fail;
			}
			break;
		}
	}
	fclose(f);
	ret = parse_buffer(buf ? buf : "", len, path, conf, err, errlen);
	free(buf);
	return ret;
fail:
	fclose(f);
	free(buf);
	return -1;
}

void dpv_conf_free(struct dpv_conf *conf)
{
	unsigned int i;

	if (conf == NULL)
		return;
	for (i = 0; i < conf->n_eal_args && i < DPV_MAX_EAL_ARGS; i++) {
		free(conf->eal_args[i]);
		conf->eal_args[i] = NULL;
	}
	conf->n_eal_args = 0;
}

const struct dpv_conf_port *dpv_conf_port_by_name(const struct dpv_conf *conf, const char *name)
{
	unsigned int i;

	if (conf == NULL || name == NULL)
		return NULL;
	for (i = 0; i < conf->n_ports && i < DPV_MAX_PORTS; i++)
		if (strcmp(conf->ports[i].name, name) == 0)
			return &conf->ports[i];
	return NULL;
}
