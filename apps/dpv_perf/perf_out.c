/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv_perf output: latency statistics (nearest-rank percentiles, a CDF and
 * a log-scale histogram), the text table, the JSON object and CSV rows.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "perf.h"
#include "perf_stats.h"

void pf_row_init(struct pf_row *row, uint32_t size, uint64_t iters, uint64_t warmup)
{
	memset(row, 0, sizeof(*row));
	row->size = size;
	row->iters = iters;
	row->warmup = warmup;
	row->ok = true;
}

void pf_row_free(struct pf_row *row)
{
	json_decref(row->cdf);
	json_decref(row->hist);
	row->cdf = row->hist = NULL;
}

const char *pf_role(const struct pf_opts *o)
{
	return o->mode == PF_LOOPBACK ? "both" : o->mode == PF_SERVER ? "server" : "client";
}

/* ticks: n latency samples (sorted here); one_way halves them; span: the
 * measured interval for the rate */
void pf_lat_finish(struct pf_row *row, uint64_t *ticks, uint64_t n, bool one_way, uint64_t span_ticks)
{
	row->one_way = one_way;
	row->lat_samples = n;
	row->has_lat = n > 0;
	if (!n)
		return;
	ps_sort(ticks, n);
	double us = pt_clk.ns_per_tick / 1000.0 / (one_way ? 2.0 : 1.0);
	ps_summary(ticks, n, us, &row->lat);
	row->cdf = ps_cdf(ticks, n, us);
	row->hist = ps_hist(ticks, n, us, 1000.0);
	double ns = pt_ticks_ns(span_ticks);
	row->lat_ops_per_s = ns > 0 ? (double)n / ns * 1e9 : 0;
	/* messages: a ping-pong carries two per round trip */
	row->msg_per_s = row->lat_ops_per_s * (one_way ? 2 : 1);
	row->bytes_per_s = row->msg_per_s * row->size;
	row->gbit_per_s = row->bytes_per_s * 8 / 1e9;
}

/* ---- text ---- */

static double setup_per_s(uint32_t n, double s) { return s > 0 ? n / s : 0; }

static long long setup_bytes(const struct pf_setup *s)
{
	long long d = 0;
	if (s->rss0 >= 0 && s->rss1 >= 0)
		d += s->rss1 - s->rss0;
	if (s->huge0 >= 0 && s->huge1 >= 0)
		d += s->huge1 - s->huge0;
	return d;
}

void pf_out_header(const struct pf_opts *o, const struct pf_ep *a, const struct pf_ep *b, const struct pf_setup *s)
{
	char name[64];
	const char *cfg = getenv("DPVERBS_CONFIG");
	pf_test_name(o, name, sizeof(name));
	printf("dpv_perf: test %s, mode %s, role %s\n", name, o->mode == PF_LOOPBACK ? "loopback" : "two-process",
	       pf_role(o));
	char rx[16] = "-";
	if (a->rx_depth)
		snprintf(rx, sizeof(rx), "%u", a->rx_depth);
	printf("  %s%s%s, %u QP%s (%s), window %u, post list %u, signal every %u, rx depth %s, inline %s, "
	       "verify %s, MTU %u\n", a->name, b ? " -> " : "", b ? b->name : "", o->qps, o->qps > 1 ? "s" : "",
	       pf_qpt_name(o->qpt), o->window, o->post_list, o->signal, rx,
	       a->max_inline ? "yes" : "no", o->verify ? "full" : "stamp", a->mtu);
	printf("  config %s; timer %s", cfg && *cfg ? cfg : "<built-in default>", pt_clock_name());
	if (pt_clk.tsc)
		printf(" (%.4f GHz, calibrated against CLOCK_MONOTONIC)", 1.0 / pt_clk.ns_per_tick);
	printf("\n  QP set-up: %u %s in %.3f ms (%.0f/s), connected in %.3f ms (%.0f/s); memory %.1f KiB per QP "
	       "(RSS + hugepages)\n", s->created, o->qpt == PF_XRC ? "XRC connections" : "QPs",
	       s->create_s * 1e3, setup_per_s(s->created, s->create_s), s->connect_s * 1e3,
	       setup_per_s(s->created, s->connect_s),
	       s->created ? (double)setup_bytes(s) / s->created / 1024.0 : 0.0);
	bool rtt = o->op == PF_READ || pf_op_atomic(o->op);
	if (o->kind == PF_LAT)
		printf("  latency in microseconds, %s\n  %8s %9s %9s %9s %9s %9s %9s %9s %13s  %s\n",
		       rtt ? "round trip of one operation" : "one-way = RTT/2", "size", "iters", "min", "p50", "p99",
		       "p99.9", "max", "mean", rtt ? "ops/s" : "round trips/s", "status");
	else
		printf("  %8s %9s %12s %11s %9s %12s %7s %7s  %s\n", "size", "iters", "msg/s", "MB/s", "Gb/s",
		       "sender msg/s", "lost", "corrupt", "status");
	fflush(stdout);
}

void pf_out_row(const struct pf_opts *o, const struct pf_row *r)
{
	const char *st = r->ok ? "ok" : "FAIL";
	if (o->kind == PF_LAT && o->mode != PF_SERVER)
		printf("  %8u %9llu %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %13.0f  %s\n", r->size,
		       (unsigned long long)r->lat_samples, r->lat.min, r->lat.p50, r->lat.p99, r->lat.p999,
		       r->lat.max, r->lat.mean, r->lat_ops_per_s, st);
	else if (o->kind == PF_LAT)
		printf("  %8u %9llu  (server: %llu received, %llu corrupt)  %s\n", r->size,
		       (unsigned long long)r->iters, (unsigned long long)r->received,
		       (unsigned long long)r->corrupt, st);
	else
		printf("  %8u %9llu %12.0f %11.2f %9.3f %12.0f %7llu %7llu  %s\n", r->size,
		       (unsigned long long)r->iters, r->msg_per_s, r->bytes_per_s / 1e6, r->gbit_per_s,
		       r->tx_msg_per_s, (unsigned long long)r->lost, (unsigned long long)r->corrupt, st);
	if (!r->ok)
		printf("           error: %s\n", r->error);
	if (o->hist && r->hist) {
		size_t i;
		json_t *b;
		json_array_foreach(r->hist, i, b)
			printf("           [%9.3f, %9.3f) us %10lld\n", json_real_value(json_array_get(b, 0)),
			       json_real_value(json_array_get(b, 1)), (long long)json_integer_value(json_array_get(b, 2)));
	}
	fflush(stdout);
}

void pf_out_text_end(const struct pf_row *rows, uint32_t nrows, const char *error)
{
	bool ok = !error;
	for (uint32_t i = 0; i < nrows; i++)
		ok = ok && rows[i].ok;
	if (ok)
		printf("  result: PASS\n");
	else
		printf("  result: FAIL%s%s\n", error ? ": " : "", error ? error : "");
	fflush(stdout);
}

/* ---- JSON ---- */

static json_t *params_json(const struct pf_opts *o, const struct pf_ep *a, const struct pf_ep *b)
{
	const char *cfg = getenv("DPVERBS_CONFIG");
	json_t *p = json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:I, s:I, s:I, s:i, s:i, s:i, s:i, s:i}",
			      "qp_type", pf_qpt_name(o->qpt), "op", pf_op_name(o->op), "kind", pf_kind_name(o->kind),
			      "size", o->size_min, "size_min", o->size_min, "size_max", o->size_max,
			      "iters", (json_int_t)o->iters, "warmup", (json_int_t)o->warmup,
			      "max_bytes", (json_int_t)o->max_bytes, "qps", o->qps, "window", o->window,
			      "post_list", o->post_list, "signal", o->signal, "rx_depth", a ? a->rx_depth : o->rx_depth);
	json_object_set_new(p, "flow_control", json_boolean(!o->no_fc));
	json_object_set_new(p, "inline", json_boolean(a && a->max_inline));
	json_object_set_new(p, "max_inline", json_integer(a ? a->max_inline : 0));
	json_object_set_new(p, "verify", json_boolean(o->verify));
	json_object_set_new(p, "hugepage_buf", json_boolean(o->hugebuf));
	json_object_set_new(p, "transport", json_string(pf_qpt_name(o->qpt)));
	json_object_set_new(p, "device", json_string(a && a->name ? a->name : ""));
	if (b)
		json_object_set_new(p, "device2", json_string(b->name ? b->name : ""));
	json_object_set_new(p, "gid_idx", json_integer(o->gid_idx));
	json_object_set_new(p, "mtu", json_integer(a ? a->mtu : 0));
	json_object_set_new(p, "timeout_s", json_integer(o->timeout_s));
	json_object_set_new(p, "config", json_string(cfg && *cfg ? cfg : "<built-in default>"));
	return p;
}

static json_t *setup_json(const struct pf_opts *o, const struct pf_setup *s)
{
	json_t *j = json_pack("{s:i, s:s, s:f, s:f, s:f, s:f}", "qps_created", s->created, "qp_means",
			      o->qpt == PF_XRC ? "XRC connection: XRC_SEND QP + XRC_RECV QP + XRC SRQ" : "one QP",
			      "create_s", s->create_s, "qp_create_per_s", setup_per_s(s->created, s->create_s),
			      "connect_s", s->connect_s, "qp_connect_per_s", setup_per_s(s->created, s->connect_s));
	json_object_set_new(j, "rss_delta_bytes", json_integer(s->rss1 - s->rss0));
	json_object_set_new(j, "hugetlb_delta_bytes", json_integer(s->huge1 >= 0 ? s->huge1 - s->huge0 : 0));
	json_object_set_new(j, "bytes_per_qp", json_real(s->created ? (double)setup_bytes(s) / s->created : 0));
	json_object_set_new(j, "measured",
			    json_string("VmRSS + HugetlbPages of /proc/self/status, before creating and after "
					"connecting the QPs (buffers, MRs and CQs exist before); creation = "
					"ibv_create_qp* + INIT, connection = RTR/RTS (UD: + one AH)"));
	return j;
}

static json_t *row_json(const struct pf_row *r)
{
	json_t *j = json_pack("{s:i, s:I, s:I}", "size", r->size, "iters", (json_int_t)r->iters,
			      "warmup", (json_int_t)r->warmup);
	if (r->has_lat) {
		json_object_set_new(j, "latency_definition",
				    json_string(r->one_way ? "one-way = RTT/2" : "round trip of one operation"));
		json_object_set_new(j, "samples", json_integer((json_int_t)r->lat_samples));
		json_object_set_new(j, r->one_way ? "one_way_us" : "round_trip_us", ps_sum_json(&r->lat));
		json_object_set_new(j, r->one_way ? "round_trips_per_s" : "ops_per_s", json_real(r->lat_ops_per_s));
		json_object_set(j, "cdf_us", r->cdf);
		json_object_set(j, "histogram_us", r->hist);
	}
	if (r->has_lat || r->has_bw) {
		json_object_set_new(j, "msg_per_s", json_real(r->msg_per_s));
		json_object_set_new(j, "bytes_per_s", json_real(r->bytes_per_s));
		json_object_set_new(j, "gbit_per_s", json_real(r->gbit_per_s));
	}
	if (r->has_bw) {
		json_object_set_new(j, "tx_msg_per_s", json_real(r->tx_msg_per_s));
		json_object_set_new(j, "duration_s", json_real(r->duration_s));
	}
	json_object_set_new(j, "sent", json_integer((json_int_t)r->sent));
	json_object_set_new(j, "received", json_integer((json_int_t)r->received));
	json_object_set_new(j, "lost", json_integer((json_int_t)r->lost));
	json_object_set_new(j, "corrupt", json_integer((json_int_t)r->corrupt));
	json_object_set_new(j, "out_of_order", json_integer((json_int_t)r->ooo));
	json_object_set_new(j, "status", json_string(r->ok ? "pass" : "fail"));
	if (!r->ok)
		json_object_set_new(j, "error", json_string(r->error));
	return j;
}

int pf_out_json(const struct pf_opts *o, const struct pf_ep *a, const struct pf_ep *b, const struct pf_setup *s,
		const struct pf_row *rows, uint32_t nrows, const char *error)
{
	char name[64];
	bool ok = !error;
	json_t *arr = json_array();
	pf_test_name(o, name, sizeof(name));
	for (uint32_t i = 0; i < nrows; i++) {
		json_array_append_new(arr, row_json(&rows[i]));
		ok = ok && rows[i].ok;
	}
	json_t *j = json_pack("{s:s, s:s, s:s, s:s}", "tool", "dpv_perf", "test", name, "mode",
			      o->mode == PF_LOOPBACK ? "loopback" : "two-process", "role", pf_role(o));
	json_object_set_new(j, "params", params_json(o, a, b));
	json_object_set_new(j, "timer", json_pack("{s:s, s:f}", "source", pt_clock_name(), "ghz",
						  1.0 / pt_clk.ns_per_tick));
	json_object_set_new(j, "setup", setup_json(o, s));
	json_object_set_new(j, "rows", arr);
	if (nrows == 1)
		json_object_set(j, "results", json_array_get(arr, 0));
	json_object_set_new(j, "status", json_string(ok ? "pass" : "fail"));
	if (!ok)
		json_object_set_new(j, "error", json_string(error ? error : "a row failed (see rows[].error)"));
	json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
	printf("\n");
	fflush(stdout);
	json_decref(j);
	return ok ? 0 : 1;
}

/* ---- CSV ---- */

static const char csv_header[] =
	"tool,test,qp_type,op,kind,mode,role,size,iters,qps,window,post_list,signal,latency_definition,"
	"lat_min_us,lat_p50_us,lat_p99_us,lat_p99_9_us,lat_max_us,lat_mean_us,msg_per_s,bytes_per_s,"
	"gbit_per_s,tx_msg_per_s,qp_create_per_s,bytes_per_qp,lost,corrupt,status\n";

int pf_out_csv(const struct pf_opts *o, const struct pf_setup *s, const struct pf_row *rows, uint32_t nrows)
{
	struct stat st;
	char name[64];
	bool fresh = stat(o->csv, &st) || st.st_size == 0;
	FILE *f = fopen(o->csv, "a");
	if (!f) {
		perror(o->csv);
		return -1;
	}
	pf_test_name(o, name, sizeof(name));
	if (fresh)
		fputs(csv_header, f);
	for (uint32_t i = 0; i < nrows; i++) {
		const struct pf_row *r = &rows[i];
		const char *def = !r->has_lat ? "" : r->one_way ? "one-way" : "round-trip";
		fprintf(f, "dpv_perf,%s,%s,%s,%s,%s,%s,%u,%llu,%u,%u,%u,%u,%s,", name, pf_qpt_name(o->qpt),
			pf_op_name(o->op), pf_kind_name(o->kind), o->mode == PF_LOOPBACK ? "loopback" : "two-process",
			pf_role(o), r->size, (unsigned long long)r->iters, o->qps, o->window, o->post_list, o->signal,
			def);
		if (r->has_lat)
			fprintf(f, "%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,", r->lat.min, r->lat.p50, r->lat.p99, r->lat.p999,
				r->lat.max, r->lat.mean);
		else
			fputs(",,,,,,", f);
		fprintf(f, "%.1f,%.1f,%.6f,%.1f,%.1f,%.1f,%llu,%llu,%s\n", r->msg_per_s, r->bytes_per_s, r->gbit_per_s,
			r->tx_msg_per_s, setup_per_s(s->created, s->create_s),
			s->created ? (double)setup_bytes(s) / s->created : 0.0, (unsigned long long)r->lost,
			(unsigned long long)r->corrupt, r->ok ? "pass" : "fail");
	}
	return fclose(f);
}
