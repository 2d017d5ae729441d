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

#include "dpv_conf_priv.h"

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

	if (conf_check_keys(x, eal, path, keys, NULL))
		return -1;
	args = json_object_get(eal, "args");
	if (args != NULL) {
		size_t i;
		json_t *a;

		if (!json_is_array(args))
			return conf_fail(x, "eal.args", "must be an array of strings (got %s)",
					 REPR(args));
		if (json_array_size(args) > DPV_MAX_EAL_ARGS)
			return conf_fail(x, "eal.args", "at most %d arguments (got %zu)",
					 DPV_MAX_EAL_ARGS, json_array_size(args));
		json_array_foreach(args, i, a) {
			char p[CONF_PATH_LEN];
			const char *hint;

			conf_pidx(p, "eal.args", i);
			if (!json_is_string(a))
				return conf_fail(x, p, "must be a string (got %s)", REPR(a));
			s = json_string_value(a);
			if (*s == '\0')
				return conf_fail(x, p, "must not be empty");
			if (strlen(s) >= CONF_EAL_ARG_MAX)
				return conf_fail(x, p, "must be shorter than %d characters",
						 CONF_EAL_ARG_MAX);
			hint = eal_arg_forbidden(s);
			if (hint)
				return conf_fail(x, p, "%s is not allowed: %s", REPR(a), hint);
			c->eal_args[c->n_eal_args] = strdup(s);
			if (c->eal_args[c->n_eal_args] == NULL)
				return conf_fail(x, p, "out of memory");
			c->n_eal_args++;
		}
	}
	r = conf_get_str(x, eal, path, "file_prefix", &s);
	if (r < 0)
		return -1;
	if (r == 1) {
		if (!conf_name_ok(s, "-"))
			return conf_fail(x, "eal.file_prefix",
					 "must be 1 to %d characters from [A-Za-z0-9_-] (got %s)",
					 DPV_NAME_MAX - 1, REPR(json_object_get(eal, "file_prefix")));
		snprintf(c->file_prefix, sizeof(c->file_prefix), "%s", s);
	}
	if (conf_get_bool(x, eal, path, "hugepages", &c->huge) < 0)
		return -1;
	if (conf_get_bool(x, eal, path, "telemetry", &c->telemetry) < 0)
		return -1;
	if (conf_get_u32(x, eal, path, "memory_mb", 0, DPV_CONF_MAX_MEMORY_MB, &c->memory_mb) < 0)
		return -1;
	r = conf_get_int(x, eal, path, "log_level", 0, DPV_CONF_MAX_LOG_LEVEL, false, &n);
	if (r < 0)
		return -1;
	if (r == 1)
		c->log_level = (int)n;
	return 0;
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

	if (conf_check_keys(x, lim, path, keys, NULL))
		return -1;
	if (conf_get_u32(x, lim, path, "max_qp", 1, DPV_CONF_LIM_MAX_QP, &c->max_qp) < 0 ||
	    conf_get_u32(x, lim, path, "max_cq", 1, DPV_CONF_LIM_MAX_CQ, &c->max_cq) < 0 ||
	    conf_get_u32(x, lim, path, "max_mr", 1, DPV_CONF_LIM_MAX_MR, &c->max_mr) < 0 ||
	    conf_get_u32(x, lim, path, "max_pd", 1, DPV_CONF_LIM_MAX_PD, &c->max_pd) < 0 ||
	    conf_get_u32(x, lim, path, "max_ah", 1, DPV_CONF_LIM_MAX_AH, &c->max_ah) < 0 ||
	    conf_get_u32(x, lim, path, "max_srq", 1, DPV_CONF_LIM_MAX_SRQ, &c->max_srq) < 0 ||
	    conf_get_u32(x, lim, path, "max_qp_wr", 1, DPV_CONF_LIM_MAX_QP_WR, &c->max_qp_wr) < 0 ||
	    conf_get_u32(x, lim, path, "max_cqe", 1, DPV_CONF_LIM_MAX_CQE, &c->max_cqe) < 0 ||
	    conf_get_u32(x, lim, path, "max_sge", 1, DPV_CONF_LIM_MAX_SGE, &c->max_sge) < 0 ||
	    conf_get_u32(x, lim, path, "max_inline_data", 0, DPV_CONF_LIM_MAX_INLINE,
			 &c->max_inline) < 0)
		return -1;
	r = conf_get_int(x, lim, path, "max_mr_size", DPV_CONF_LIM_MIN_MR_SIZE,
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

	if (conf_check_keys(x, f, path, keys, NULL))
		return -1;
	if (conf_get_prob(x, f, path, "drop", &ft->drop) < 0 ||
	    conf_get_prob(x, f, path, "duplicate", &ft->duplicate) < 0 ||
	    conf_get_prob(x, f, path, "reorder", &ft->reorder) < 0 ||
	    conf_get_prob(x, f, path, "corrupt", &ft->corrupt) < 0)
		return -1;
	r = conf_get_int(x, f, path, "seed", 0, INT64_MAX, false, &n);
	if (r < 0)
		return -1;
	if (r == 1)
		ft->seed = (uint64_t)n;
	return 0;
}

/* "shared": {"socket": "/absolute/path", "idle_yield": N}: where dpverbsd
 * listens; how often a thread polling an empty CQ gives its CPU away. */
static int parse_shared(struct ctx *x, json_t *sh)
{
	static const char *const keys[] = { "socket", "idle_yield", NULL };
	const char *path = "shared", *s;
	char p[CONF_PATH_LEN];

	if (conf_check_keys(x, sh, path, keys, NULL))
		return -1;
	int r = conf_get_str(x, sh, path, "socket", &s);
	if (r < 0)
		return -1;
	if (r == 1) {
		conf_pjoin(p, path, "socket");
		if (s[0] != '/')
			return conf_fail(x, p, "must be an absolute path (got \"%s\")", s);
		if (strlen(s) >= sizeof(x->c->shared_socket))
			return conf_fail(x, p, "at most %zu characters (a Unix socket path)",
					 sizeof(x->c->shared_socket) - 1);
		snprintf(x->c->shared_socket, sizeof(x->c->shared_socket), "%s", s);
	}
	return conf_get_u32(x, sh, path, "idle_yield", 0, DPV_CONF_MAX_IDLE_YIELD, &x->c->shared_idle_yield) < 0 ? -1 : 0;
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

		conf_pjoin(p, "log", key);
		if (c->n_log >= DPV_CONF_MAX_LOG)
			return conf_fail(x, p, "at most %d log types", DPV_CONF_MAX_LOG);
		if (!*key || strlen(key) >= DPV_NAME_MAX ||
		    strspn(key, "abcdefghijklmnopqrstuvwxyz0123456789._*") != strlen(key))
			return conf_fail(x, p, "not a DPDK log type or pattern (letters, digits, '.', '_', '*')");
		if (conf_get_int(x, lg, "log", key, 1, DPV_CONF_MAX_LOG_LEVEL, false, &n) < 0)
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
	snprintf(c->shared_socket, sizeof(c->shared_socket), "%s", DPV_CONF_DEF_SHARED_SOCKET);
	c->shared_idle_yield = DPV_CONF_DEF_IDLE_YIELD;
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
	static const char *const keys[] = { "driver", "mode", "shared", "progress", "software_loopback",
					    "eal", "ports", "limits", "fault", "log", NULL };
	static const char *const drivers[] = { "sw", "null", NULL };
	static const char *const modes[] = { "embedded", "shared", NULL };
	static const char *const progs[] = { "inline", "lcore", NULL };
	struct dpv_conf *c = x->c;
	json_t *o;
	int v, r;

	if (!json_is_object(root))
		return conf_fail(x, "(root)", "must be a JSON object (got %s)", REPR(root));
	if (conf_check_keys(x, root, "", keys, NULL))
		return -1;
	set_defaults(c);
	r = conf_get_enum(x, root, "", "driver", drivers, &v);
	if (r < 0)
		return -1;
	if (r == 1)
		snprintf(c->driver, sizeof(c->driver), "%s", drivers[v]);
	r = conf_get_enum(x, root, "", "mode", modes, &v);
	if (r < 0)
		return -1;
	if (r == 1)
		c->mode = v == 0 ? DPV_MODE_EMBEDDED : DPV_MODE_SHARED;
	r = conf_get_enum(x, root, "", "progress", progs, &v);
	if (r < 0)
		return -1;
	if (r == 1)
		c->progress = v == 0 ? DPV_PROGRESS_INLINE : DPV_PROGRESS_LCORE;
	if (conf_get_bool(x, root, "", "software_loopback", &c->sw_loopback) < 0)
		return -1;
	o = NULL;
	r = conf_get_obj(x, root, "", "eal", &o);
	if (r < 0 || (r == 1 && parse_eal(x, o) < 0))
		return -1;
	if (conf_parse_ports(x, root) < 0)
		return -1;
	r = conf_get_obj(x, root, "", "limits", &o);
	if (r < 0 || (r == 1 && parse_limits(x, o) < 0))
		return -1;
	r = conf_get_obj(x, root, "", "fault", &o);
	if (r < 0 || (r == 1 && parse_fault(x, o) < 0))
		return -1;
	r = conf_get_obj(x, root, "", "log", &o);
	if (r < 0 || (r == 1 && parse_log(x, o) < 0))
		return -1;
	r = conf_get_obj(x, root, "", "shared", &o);
	if (r < 0 || (r == 1 && parse_shared(x, o) < 0))
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

uint16_t dpv_conf_lid_of(uint32_t a, uint8_t prefix)
{
	uint32_t h = ntohl(a);
	uint16_t lid = (uint16_t)(h & 0xffff);
	return a && prefix >= 16 && lid >= 1 && lid <= 0xbfff ? lid : 0;
}

const char *dpv_conf_port_netdev(const struct dpv_conf_port *cp)
{
	if (cp->type == DPV_DEV_AF_XDP)
		return cp->iface;
	return cp->kernel_iface[0] ? cp->kernel_iface : NULL;
}

bool dpv_conf_port_follows_kernel(const struct dpv_conf_port *cp)
{
	return cp->type == DPV_DEV_AF_XDP && !cp->ipv4.s_addr && !cp->n_ipv6;
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
