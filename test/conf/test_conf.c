/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit test of lib/conf: the shipped configuration files (paths given on the
 * command line), the built-in default against config/default.json, a table
 * of malformed configurations with their exact error messages, and the
 * $DPVERBS_CONFIG selection.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpv_conf.h"
#include "dpvt_check.h"

/* Table inputs use ' for " to stay readable. */
static char *dq(const char *s)
{
	char *r = strdup(s), *p;

	if (r == NULL)
		abort();
	for (p = r; *p; p++)
		if (*p == '\'')
			*p = '"';
	return r;
}

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static const char *ip4(struct in_addr a, char *buf)
{
	return inet_ntop(AF_INET, &a, buf, INET_ADDRSTRLEN);
}

static const char *ip6(const struct in6_addr *a, char *buf)
{
	return inet_ntop(AF_INET6, a, buf, INET6_ADDRSTRLEN);
}

/* ------------------------------------------------------------------ */
/* malformed configurations                                            */

#define DEV "'device':{'type':'vdev','args':'net_null0'}"
#define DEV1 "'device':{'type':'vdev','args':'net_null1'}"
/* one valid port plus extra fields */
#define P(extra) "{'ports':[{'name':'dpv0'," DEV extra "}]}"
/* top-level extra fields around one valid port */
#define T(extra) "{'ports':[{'name':'dpv0'," DEV "}]" extra "}"
/* two valid ports plus extra fields for each */
#define P2(e0, e1) "{'ports':[{'name':'dpv0'," DEV e0 "},{'name':'dpv1'," DEV1 e1 "}]}"
/* a ring pair plus extras */
#define RING(p0, p1, extra) \
	"{'ports':[{'name':'dpv0','device':{'type':'ring','peer':'" p0 "'}}," \
	"{'name':'dpv1','device':{'type':'ring','peer':'" p1 "'}}" extra "]}"

struct bad {
	const char *json;
	const char *err;
};

static const struct bad bad_table[] = {
	/* JSON syntax */
	{ "{'ports': [}", "t:1:12: unexpected token near '}'" },
	{ "{\n  'ports': [\n    {'name': 'dpv0',}\n  ]\n}",
	  "t:3:21: string or '}' expected near '}'" },
	{ "", "t:1:0: '[' or '{' expected near end of file" },
	{ "{'ports':[], 'ports':[]}", "t:1:20: duplicate object key near '\"ports\"'" },
	{ P(",'mtu':99999999999999999999"), "t:1:95: too big integer near '99999999999999999999'" },
	{ "{'ports':[]} x", "t:1:14: end of file expected near 'x'" },
	{ "[]", "t: (root): must be a JSON object (got [])" },
	/* top level */
	{ "{'port':[]}",
	  "t: port: unknown field (expected one of: driver, mode, shared, progress, software_loopback, eal, "
	  "ports, limits, fault, log)" },
	{ T(",'_comment':'x'"),
	  "t: _comment: unknown field (expected one of: driver, mode, shared, progress, software_loopback, eal, "
	  "ports, limits, fault, log)" },
	{ T(",'shared':{'socket':'rel/x.sock'}"),
	  "t: shared.socket: must be an absolute path (got \"rel/x.sock\")" },
	{ T(",'shared':{'sock':'/x'}"),
	  "t: shared.sock: unknown field (expected one of: socket, idle_yield)" },
	{ T(",'shared':{'idle_yield':-1}"),
	  "t: shared.idle_yield: must be an integer between 0 and 1000000000 (got -1)" },
	{ T(",'shared':{'idle_yield':'64'}"),
	  "t: shared.idle_yield: must be an integer between 0 and 1000000000 (got \"64\")" },
	{ T(",'shared':{'socket':5}"),
	  "t: shared.socket: must be a string (got 5)" },
	{ T(",'driver':'hw'"),
	  "t: driver: must be \"sw\" or \"null\" (got \"hw\")" },
	{ T(",'log':{'pmd.dpv.sw':9}"),
	  "t: log.pmd.dpv.sw: must be an integer between 1 and 8 (got 9)" },
	{ T(",'log':{'a b':5}"),
	  "t: log.a b: not a DPDK log type or pattern (letters, digits, '.', '_', '*')" },
	{ T(",'log':7"),
	  "t: log: must be an object (got 7)" },
	{ "{}", "t: ports: required field is missing (at least one port)" },
	{ "{'ports':[]}", "t: ports: must contain at least one port" },
	{ "{'ports':{}}", "t: ports: must be an array of port objects (got {})" },
	{ "{'ports':[1,1,1,1,1,1,1,1,1]}", "t: ports: at most 8 ports (got 9)" },
	{ "{'ports':[1]}", "t: ports[0]: must be an object (got 1)" },
	{ T(",'mode':'cluster'"), "t: mode: must be \"embedded\" or \"shared\" (got \"cluster\")" },
	{ T(",'progress':1"), "t: progress: must be \"inline\" or \"lcore\" (got 1)" },
	{ T(",'software_loopback':1"), "t: software_loopback: must be true or false (got 1)" },
	/* port fields */
	{ P(",'mtus':1500"),
	  "t: ports[0].mtus: unknown field (expected one of: name, device, mac, ipv4, ipv6, "
	  "mtu, rx_desc, tx_desc, queues, lcores, mbufs, flow, kernel_iface, lid, dm_size)" },
	{ "{'ports':[{" DEV "}]}", "t: ports[0].name: required field is missing" },
	{ "{'ports':[{'name':5," DEV "}]}", "t: ports[0].name: must be a string (got 5)" },
	{ "{'ports':[{'name':'Dpv0'," DEV "}]}",
	  "t: ports[0].name: must be 1 to 63 characters from [a-z0-9_] (got \"Dpv0\")" },
	{ "{'ports':[{'name':'dpv-0'," DEV "}]}",
	  "t: ports[0].name: must be 1 to 63 characters from [a-z0-9_] (got \"dpv-0\")" },
	{ "{'ports':[{'name':'" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" "',"
	  DEV "}]}",
	  "t: ports[0].name: must be 1 to 63 characters from [a-z0-9_] (got "
	  "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...)" },
	{ "{'ports':[{'name':'dpv0'," DEV "},{'name':'dpv0'," DEV1 "}]}",
	  "t: ports[1].name: duplicate port name \"dpv0\" (also ports[0].name)" },
	/* device */
	{ "{'ports':[{'name':'dpv0'}]}", "t: ports[0].device: required field is missing" },
	{ "{'ports':[{'name':'dpv0','device':'ring'}]}",
	  "t: ports[0].device: must be an object (got \"ring\")" },
	{ "{'ports':[{'name':'dpv0','device':{'peer':'dpv1'}}]}",
	  "t: ports[0].device.type: required field is missing" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'tap'}}]}",
	  "t: ports[0].device.type: must be \"ring\", \"vdev\", \"pci\" or \"af_xdp\" (got \"tap\")" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'ring'}}]}",
	  "t: ports[0].device.peer: required field is missing" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'ring','peer':'dpv1','args':'x'}}]}",
	  "t: ports[0].device.args: unknown field for device type \"ring\" (expected one of: "
	  "type, peer)" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'ring','peer':'dpv0'}}]}",
	  "t: ports[0].device.peer: must name another port, not the port itself (got \"dpv0\")" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'ring','peer':'Dpv1'}}]}",
	  "t: ports[0].device.peer: must be a port name (got \"Dpv1\")" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'pci','address':'0000:03:00.0',"
	  "'args':'a=1 b=2'}}]}",
	  "t: ports[0].device.args: must not contain spaces or control characters" },
	{ P(",'mac':'02:64:70:76:00:01','ipv4':'192.0.2.1/24','ipv6':['fd00::\u00e9/64']"),
	  "t: ports[0].ipv6[0]: must be \"address/prefix\" (got \"fd00::\\u00E9/64\")" },
	{ RING("dpv9", "dpv0", ""), "t: ports[0].device.peer: no port is named \"dpv9\"" },
	{ RING("dpv1", "dpv2", ",{'name':'dpv2','device':{'type':'ring','peer':'dpv1'}}"),
	  "t: ports[0].device.peer: ring peers must name each other: port \"dpv1\" has peer "
	  "\"dpv2\", not \"dpv0\"" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'ring','peer':'dpv1'}},{'name':'dpv1',"
	  DEV "}]}",
	  "t: ports[0].device.peer: port \"dpv1\" is not a ring device" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'vdev'}}]}",
	  "t: ports[0].device.args: required field is missing" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'vdev','args':''}}]}",
	  "t: ports[0].device.args: must not be empty" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'vdev','args':'0000:03:00.0,txq_inline=0'}}]}",
	  "t: ports[0].device.args: starts with a PCI address: use \"type\": \"pci\" with "
	  "\"address\" instead (got \"0000:03:00.0,txq_inline=0\")" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'vdev','args':'03:00.0'}}]}",
	  "t: ports[0].device.args: starts with a PCI address: use \"type\": \"pci\" with "
	  "\"address\" instead (got \"03:00.0\")" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'vdev','args':'net_tap0, iface=x'}}]}",
	  "t: ports[0].device.args: must not contain spaces or control characters" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'vdev','args':',iface=x'}}]}",
	  "t: ports[0].device.args: must start with a device name such as \"net_memif0\" "
	  "(got \",iface=x\")" },
	{ "{'ports':[{'name':'dpv0'," DEV "},{'name':'dpv1','device':{'type':'vdev',"
	  "'args':'net_null0,size=64'}}]}",
	  "t: ports[1].device.args: device net_null0 is already used by ports[0]" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'pci'}}]}",
	  "t: ports[0].device.address: required field is missing" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'pci','address':'03:00.0'}}]}",
	  "t: ports[0].device.address: must be a PCI address DDDD:BB:DD.F (got \"03:00.0\")" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'pci','address':'0000:03:20.0'}}]}",
	  "t: ports[0].device.address: must be a PCI address DDDD:BB:DD.F (got \"0000:03:20.0\")" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'pci','address':'0000:03:00.8'}}]}",
	  "t: ports[0].device.address: must be a PCI address DDDD:BB:DD.F (got \"0000:03:00.8\")" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'pci','address':'0000:03:00.0x'}}]}",
	  "t: ports[0].device.address: must be a PCI address DDDD:BB:DD.F (got \"0000:03:00.0x\")" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'pci','address':'0000:03:00.0'}},"
	  "{'name':'dpv1','device':{'type':'pci','address':'0000:03:00.0','args':'a=1'}}]}",
	  "t: ports[1].device.address: device 0000:03:00.0 is already used by ports[0]" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'vdev','args':'net_null0','peer':'x'}}]}",
	  "t: ports[0].device.peer: unknown field for device type \"vdev\" (expected one of: "
	  "type, args)" },
	/* af_xdp and the exception path */
	{ "{'ports':[{'name':'dpv0','device':{'type':'af_xdp'}}]}",
	  "t: ports[0].device.iface: required field is missing" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'af_xdp','iface':'eth0/x'}}]}",
	  "t: ports[0].device.iface: must be a network interface name, 1 to 15 characters from "
	  "[A-Za-z0-9_.-] (got \"eth0/x\")" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'af_xdp','iface':'abcdefghijklmnop'}}]}",
	  "t: ports[0].device.iface: must be a network interface name, 1 to 15 characters from "
	  "[A-Za-z0-9_.-] (got \"abcdefghijklmnop\")" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'af_xdp','iface':'..'}}]}",
	  "t: ports[0].device.iface: must be a network interface name, 1 to 15 characters from "
	  "[A-Za-z0-9_.-] (got \"..\")" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'af_xdp','iface':'eth0','args':'x'}}]}",
	  "t: ports[0].device.args: unknown field for device type \"af_xdp\" (expected one of: "
	  "type, iface, queues, xdp_mode)" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'af_xdp','iface':'eth0','queues':9}}]}",
	  "t: ports[0].device.queues: must be an integer between 1 and 8 (got 9)" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'af_xdp','iface':'eth0','xdp_mode':'drv'}}]}",
	  "t: ports[0].device.xdp_mode: must be \"auto\", \"native\" or \"generic\" (got \"drv\")" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'af_xdp','iface':'eth0','queues':2},'queues':4}]}",
	  "t: ports[0].queues: 4 differs from device.queues 2: give the number once" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'af_xdp','iface':'eth0'},'mac':'02:00:00:00:00:01'}]}",
	  "t: ports[0].mac: an \"af_xdp\" port has the MAC of its interface eth0: remove \"mac\" (or "
	  "change the interface's: ip link set dev eth0 address ...)" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'af_xdp','iface':'eth0'},'flow':'isolate'}]}",
	  "t: ports[0].flow: \"isolate\" is for bifurcated PCI NICs: an \"af_xdp\" port takes only "
	  "RoCEv2 through its XDP program already (use \"auto\" or \"off\")" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'af_xdp','iface':'eth0'},'kernel_iface':'k0'}]}",
	  "t: ports[0].kernel_iface: an \"af_xdp\" port shares its interface (eth0) with the kernel "
	  "already: no exception path is needed" },
	{ P(",'kernel_iface':''"),
	  "t: ports[0].kernel_iface: must be a network interface name, 1 to 15 characters from "
	  "[A-Za-z0-9_.-] (got \"\")" },
	{ P(",'kernel_iface':7"), "t: ports[0].kernel_iface: must be a string (got 7)" },
	{ P(",'lid':'on'"), "t: ports[0].lid: must be \"auto\" or \"off\" (got \"on\")" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'ring','peer':'dpv1'},'kernel_iface':'k0'},"
	  "{'name':'dpv1','device':{'type':'ring','peer':'dpv0'}}]}",
	  "t: ports[0].kernel_iface: a \"ring\" device has no wire for the kernel's frames: use it "
	  "with vdev or pci devices" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'af_xdp','iface':'eth0'}},"
	  "{'name':'dpv1','device':{'type':'af_xdp','iface':'eth0'}}]}",
	  "t: ports[1].device.iface: device eth0 is already used by ports[0]" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'af_xdp','iface':'eth0'}},"
	  "{'name':'dpv1'," DEV1 ",'kernel_iface':'eth0'}]}",
	  "t: ports[1].kernel_iface: interface eth0 is already used by ports[0]" },
	{ P2(",'kernel_iface':'k0'", ",'kernel_iface':'k0'"),
	  "t: ports[1].kernel_iface: interface k0 is already used by ports[0]" },
	/* MAC */
	{ P(",'mac':'02:64:70:76:00'"),
	  "t: ports[0].mac: must be a MAC address xx:xx:xx:xx:xx:xx (got \"02:64:70:76:00\")" },
	{ P(",'mac':'02-64-70-76-00-01'"),
	  "t: ports[0].mac: must be a MAC address xx:xx:xx:xx:xx:xx (got \"02-64-70-76-00-01\")" },
	{ P(",'mac':'01:00:5e:00:00:01'"),
	  "t: ports[0].mac: must be a unicast address: the least significant bit of the first "
	  "octet must be 0 (got \"01:00:5e:00:00:01\")" },
	{ P(",'mac':'00:00:00:00:00:00'"), "t: ports[0].mac: must not be all zeros" },
	{ P2(",'mac':'02:00:00:00:00:01'", ",'mac':'02:00:00:00:00:01'"),
	  "t: ports[1].mac: MAC address 02:00:00:00:00:01 is already used by ports[0]" },
	/* IPv4 */
	{ P(",'ipv4':'192.0.2.1'"),
	  "t: ports[0].ipv4: must be \"a.b.c.d/prefix\" (got \"192.0.2.1\")" },
	{ P(",'ipv4':'192.0.2.256/24'"),
	  "t: ports[0].ipv4: must be \"a.b.c.d/prefix\" (got \"192.0.2.256/24\")" },
	{ P(",'ipv4':'192.0.2.1/33'"),
	  "t: ports[0].ipv4: prefix length must be between 1 and 32 (got \"192.0.2.1/33\")" },
	{ P(",'ipv4':'192.0.2.1/0'"),
	  "t: ports[0].ipv4: prefix length must be between 1 and 32 (got \"192.0.2.1/0\")" },
	{ P(",'ipv4':'192.0.2.1/x'"),
	  "t: ports[0].ipv4: must be \"a.b.c.d/prefix\" (got \"192.0.2.1/x\")" },
	{ P(",'ipv4':'192.0.2.0/24'"),
	  "t: ports[0].ipv4: 192.0.2.0 is the network address of 192.0.2.0/24" },
	{ P(",'ipv4':'192.0.2.255/24'"),
	  "t: ports[0].ipv4: 192.0.2.255 is the broadcast address of 192.0.2.0/24" },
	{ P(",'ipv4':'224.0.0.1/4'"),
	  "t: ports[0].ipv4: must be a unicast host address (got \"224.0.0.1/4\")" },
	{ P(",'ipv4':'127.0.0.1/8'"),
	  "t: ports[0].ipv4: must be a unicast host address (got \"127.0.0.1/8\")" },
	{ P(",'ipv4':[1]"), "t: ports[0].ipv4: must be a string (got [1])" },
	{ P2(",'ipv4':'192.0.2.1/24'", ",'ipv4':'192.0.2.1/25'"),
	  "t: ports[1].ipv4: address 192.0.2.1 is already used by ports[0]" },
	/* IPv6 */
	{ P(",'ipv6':'fd00::1/64'"),
	  "t: ports[0].ipv6: must be an array of \"address/prefix\" strings (got \"fd00::1/64\")" },
	{ P(",'ipv6':['fd00::1']"),
	  "t: ports[0].ipv6[0]: must be \"address/prefix\" (got \"fd00::1\")" },
	{ P(",'ipv6':['fd00::1/64','fd00::g/64']"),
	  "t: ports[0].ipv6[1]: must be \"address/prefix\" (got \"fd00::g/64\")" },
	{ P(",'ipv6':['fd00::1/129']"),
	  "t: ports[0].ipv6[0]: prefix length must be between 1 and 128 (got \"fd00::1/129\")" },
	{ P(",'ipv6':['fe80::1/64']"),
	  "t: ports[0].ipv6[0]: link-local addresses cannot be configured: GID index 0 is the "
	  "port's link-local address (got \"fe80::1/64\")" },
	{ P(",'ipv6':['ff02::1/64']"),
	  "t: ports[0].ipv6[0]: must be a unicast global or unique-local address (got "
	  "\"ff02::1/64\")" },
	{ P(",'ipv6':['::ffff:192.0.2.1/96']"),
	  "t: ports[0].ipv6[0]: must be a unicast global or unique-local address (got "
	  "\"::ffff:192.0.2.1/96\")" },
	{ P(",'ipv6':['fd00:1::/64']"),
	  "t: ports[0].ipv6[0]: fd00:1:: is the subnet-router anycast address of fd00:1::/64" },
	{ P(",'ipv6':['fd00::1/64','fd00::0:1/120']"),
	  "t: ports[0].ipv6[1]: address fd00::1 is listed twice (also ports[0].ipv6[0])" },
	{ P(",'ipv6':['fd00::1/64','fd00::2/64','fd00::3/64','fd00::4/64','fd00::5/64']"),
	  "t: ports[0].ipv6: at most 4 addresses (got 5)" },
	{ P2(",'ipv6':['fd00::1/64']", ",'ipv6':['fd00::2/64','fd00::1/64']"),
	  "t: ports[1].ipv6[1]: address fd00::1 is already used by ports[0]" },
	/* numeric port fields */
	{ P(",'mtu':70000"), "t: ports[0].mtu: must be an integer between 256 and 9000 (got 70000)" },
	{ P(",'mtu':255"), "t: ports[0].mtu: must be an integer between 256 and 9000 (got 255)" },
	{ P(",'mtu':'1500'"),
	  "t: ports[0].mtu: must be an integer between 256 and 9000 (got \"1500\")" },
	{ P(",'mtu':1500.0"),
	  "t: ports[0].mtu: must be an integer between 256 and 9000 (got 1500.0)" },
	{ P(",'mtu':true"), "t: ports[0].mtu: must be an integer between 256 and 9000 (got true)" },
	{ P(",'rx_desc':1000"),
	  "t: ports[0].rx_desc: must be a power of two between 64 and 16384 (got 1000)" },
	{ P(",'rx_desc':32768"),
	  "t: ports[0].rx_desc: must be a power of two between 64 and 16384 (got 32768)" },
	{ P(",'tx_desc':32"),
	  "t: ports[0].tx_desc: must be a power of two between 64 and 16384 (got 32)" },
	{ P(",'queues':0"), "t: ports[0].queues: must be an integer between 1 and 8 (got 0)" },
	{ P(",'queues':9"), "t: ports[0].queues: must be an integer between 1 and 8 (got 9)" },
	{ P(",'mbufs':100"), "t: ports[0].mbufs: must be an integer between 128 and 16777216 (got 100)" },
	{ P(",'queues':2,'mbufs':4095"),
	  "t: ports[0].mbufs: must be at least queues * (rx_desc + tx_desc) = 4096 (got 4095)" },
	/* device memory */
	{ P(",'dm_size':-1"),
	  "t: ports[0].dm_size: must be an integer between 0 and 1073741824 (got -1)" },
	{ P(",'dm_size':1073741888"),
	  "t: ports[0].dm_size: must be an integer between 0 and 1073741824 (got 1073741888)" },
	{ P(",'dm_size':100"), "t: ports[0].dm_size: must be a multiple of 64 bytes (got 100)" },
	{ P(",'dm_size':'256K'"),
	  "t: ports[0].dm_size: must be an integer between 0 and 1073741824 (got \"256K\")" },
	/* flow */
	{ P(",'flow':'on'"), "t: ports[0].flow: must be \"auto\", \"off\" or \"isolate\" (got \"on\")" },
	{ P(",'flow':true"), "t: ports[0].flow: must be \"auto\", \"off\" or \"isolate\" (got true)" },
	{ P(",'flow':'Auto'"),
	  "t: ports[0].flow: must be \"auto\", \"off\" or \"isolate\" (got \"Auto\")" },
	{ "{'ports':[{'name':'dpv0','device':{'type':'ring','peer':'dpv1'},'flow':'isolate'},"
	  "{'name':'dpv1','device':{'type':'ring','peer':'dpv0'}}]}",
	  "t: ports[0].flow: \"isolate\" needs a device with rte_flow rules: a \"ring\" device "
	  "has none (use \"auto\" or \"off\")" },
	/* lcores */
	{ P(",'lcores':[1]"), "t: ports[0].lcores: only allowed with \"progress\": \"lcore\"" },
	{ "{'progress':'lcore','ports':[{'name':'dpv0'," DEV "}]}",
	  "t: ports[0].lcores: required field is missing (\"progress\" is \"lcore\": list one "
	  "lcore per queue)" },
	{ "{'progress':'lcore','ports':[{'name':'dpv0'," DEV ",'queues':2,'lcores':[1]}]}",
	  "t: ports[0].lcores: must list exactly 2 lcore(s), one per queue (got 1)" },
	{ "{'progress':'lcore','ports':[{'name':'dpv0'," DEV ",'lcores':[128]}]}",
	  "t: ports[0].lcores[0]: must be an integer between 0 and 127 (got 128)" },
	{ "{'progress':'lcore','ports':[{'name':'dpv0'," DEV ",'lcores':['1']}]}",
	  "t: ports[0].lcores[0]: must be an integer between 0 and 127 (got \"1\")" },
	{ "{'progress':'lcore','ports':[{'name':'dpv0'," DEV ",'queues':3,'lcores':[1,2,1]}]}",
	  "t: ports[0].lcores[2]: duplicate lcore 1 (also ports[0].lcores[0])" },
	{ "{'progress':'lcore','ports':[{'name':'dpv0'," DEV ",'lcores':1}]}",
	  "t: ports[0].lcores: must be an array of lcore ids (got 1)" },
	/* EAL */
	{ T(",'eal':[]"), "t: eal: must be an object (got [])" },
	{ T(",'eal':{'argv':[]}"),
	  "t: eal.argv: unknown field (expected one of: args, file_prefix, hugepages, memory_mb, "
	  "log_level, telemetry)" },
	{ T(",'eal':{'args':'--no-pci'}"),
	  "t: eal.args: must be an array of strings (got \"--no-pci\")" },
	{ T(",'eal':{'args':['--no-pci',5]}"), "t: eal.args[1]: must be a string (got 5)" },
	{ T(",'eal':{'args':['']}"), "t: eal.args[0]: must not be empty" },
	{ T(",'eal':{'args':['--vdev','net_tap0']}"),
	  "t: eal.args[0]: \"--vdev\" is not allowed: declare devices in ports[] instead" },
	{ T(",'eal':{'args':['--vdev=net_tap0']}"),
	  "t: eal.args[0]: \"--vdev=net_tap0\" is not allowed: declare devices in ports[] instead" },
	{ T(",'eal':{'args':['--no-pci','-a','0000:03:00.0']}"),
	  "t: eal.args[1]: \"-a\" is not allowed: declare devices in ports[] instead" },
	{ T(",'eal':{'args':['-a0000:03:00.0']}"),
	  "t: eal.args[0]: \"-a0000:03:00.0\" is not allowed: declare devices in ports[] instead" },
	{ T(",'eal':{'args':['--allow=0000:03:00.0']}"),
	  "t: eal.args[0]: \"--allow=0000:03:00.0\" is not allowed: declare devices in ports[] "
	  "instead" },
	{ T(",'eal':{'args':['--vd=net_tap0']}"),
	  "t: eal.args[0]: \"--vd=net_tap0\" is not allowed: declare devices in ports[] instead" },
	{ T(",'eal':{'args':['-b','0000:03:00.0']}"),
	  "t: eal.args[0]: \"-b\" is not allowed: declare devices in ports[] instead" },
	{ T(",'eal':{'args':['--file-prefix=x']}"),
	  "t: eal.args[0]: \"--file-prefix=x\" is not allowed: use eal.file_prefix instead" },
	{ T(",'eal':{'args':['--no-huge']}"),
	  "t: eal.args[0]: \"--no-huge\" is not allowed: use eal.hugepages instead" },
	{ T(",'eal':{'args':['-m512']}"),
	  "t: eal.args[0]: \"-m512\" is not allowed: use eal.memory_mb instead" },
	{ T(",'eal':{'args':['-n','4','-n','4','-n','4','-n','4','-n','4','-n','4','-n','4',"
	    "'-n','4','-n','4','-n','4','-n','4','-n','4','-n','4','-n','4','-n','4','-n','4',"
	    "'-n']}"),
	  "t: eal.args: at most 32 arguments (got 33)" },
	{ T(",'eal':{'file_prefix':'dpv a'}"),
	  "t: eal.file_prefix: must be 1 to 63 characters from [A-Za-z0-9_-] (got \"dpv a\")" },
	{ T(",'eal':{'file_prefix':''}"),
	  "t: eal.file_prefix: must be 1 to 63 characters from [A-Za-z0-9_-] (got \"\")" },
	{ T(",'eal':{'hugepages':'yes'}"), "t: eal.hugepages: must be true or false (got \"yes\")" },
	{ T(",'eal':{'telemetry':1}"), "t: eal.telemetry: must be true or false (got 1)" },
	{ T(",'eal':{'memory_mb':-1}"),
	  "t: eal.memory_mb: must be an integer between 0 and 1048576 (got -1)" },
	{ T(",'eal':{'log_level':9}"),
	  "t: eal.log_level: must be an integer between 0 and 8 (got 9)" },
	/* limits */
	{ T(",'limits':{'max_qps':1}"),
	  "t: limits.max_qps: unknown field (expected one of: max_qp, max_cq, max_mr, max_pd, "
	  "max_ah, max_srq, max_qp_wr, max_cqe, max_sge, max_inline_data, max_mr_size)" },
	{ T(",'limits':{'max_qp':0}"),
	  "t: limits.max_qp: must be an integer between 1 and 262144 (got 0)" },
	{ T(",'limits':{'max_cq':'10'}"),
	  "t: limits.max_cq: must be an integer between 1 and 262144 (got \"10\")" },
	{ T(",'limits':{'max_sge':257}"),
	  "t: limits.max_sge: must be an integer between 1 and 256 (got 257)" },
	{ T(",'limits':{'max_inline_data':-1}"),
	  "t: limits.max_inline_data: must be an integer between 0 and 4096 (got -1)" },
	{ T(",'limits':{'max_mr_size':1000}"),
	  "t: limits.max_mr_size: must be an integer between 4096 and 281474976710656 (got 1000)" },
	{ T(",'limits':5"), "t: limits: must be an object (got 5)" },
	/* fault */
	{ T(",'fault':{'drop':1.5}"), "t: fault.drop: must be a number between 0 and 1 (got 1.5)" },
	{ T(",'fault':{'reorder':-0.1}"),
	  "t: fault.reorder: must be a number between 0 and 1 (got -0.1)" },
	{ T(",'fault':{'corrupt':'0.1'}"),
	  "t: fault.corrupt: must be a number between 0 and 1 (got \"0.1\")" },
	{ T(",'fault':{'duplicate':2}"),
	  "t: fault.duplicate: must be a number between 0 and 1 (got 2)" },
	{ T(",'fault':{'seed':-1}"),
	  "t: fault.seed: must be an integer between 0 and 9223372036854775807 (got -1)" },
	{ T(",'fault':{'delay':0.1}"),
	  "t: fault.delay: unknown field (expected one of: drop, duplicate, reorder, corrupt, "
	  "seed)" },
};

static void test_bad_table(void)
{
	size_t i, n = sizeof(bad_table) / sizeof(bad_table[0]);

	for (i = 0; i < n; i++) {
		struct dpv_conf c;
		char err[1024] = "";
		char *json = dq(bad_table[i].json);
		int r;

		memset(&c, 0xa5, sizeof(c));
		r = dpv_conf_parse_string(json, "t", &c, err, sizeof(err));
		CHECK(r == -1, "case %zu returned %d for %s", i, r, json);
		CHECK(strcmp(err, bad_table[i].err) == 0,
		      "case %zu: %s\n      expected: %s\n      got:      %s", i, json,
		      bad_table[i].err, err);
		CHECK(c.n_ports == 0 && c.n_eal_args == 0 && c.source[0] == '\0',
		      "case %zu: conf not cleared on error", i);
		dpv_conf_free(&c);
		free(json);
	}
	printf("malformed configurations: %zu cases\n", n);
}

/* ------------------------------------------------------------------ */
/* valid configurations                                                */

static void test_kitchen_sink(void)
{
	static const char *js =
		"{'mode':'shared','progress':'lcore','software_loopback':false,"
		"'shared':{'socket':'/s/d.sock','idle_yield':0},"
		"'eal':{'args':['--no-pci','--log-level=lib.eal:4','--in-memory'],"
		"'file_prefix':'Dpv-X_1','hugepages':false,'memory_mb':512,'log_level':8,"
		"'telemetry':false},"
		"'ports':[{'name':'p_0','device':{'type':'pci','address':'0000:af:1f.7',"
		"'args':'txq_inline_max=0'},'mac':'0A:0b:0C:0d:0E:0f','ipv4':'10.1.2.3/31',"
		"'ipv6':['2001:db8::1/128','fd00::5/127'],'mtu':9000,'rx_desc':64,'tx_desc':16384,"
		"'queues':2,'lcores':[0,127],'flow':'isolate'},"
		"{'name':'p1','device':{'type':'vdev','args':'net_tap0'},'ipv4':'10.1.2.4/32',"
		"'rx_desc':64,'tx_desc':64,'lcores':[5],'mbufs':128,'flow':'off','dm_size':0}],"
		"'limits':{'max_qp':1,'max_cq':2,'max_mr':3,'max_pd':4,'max_ah':5,'max_srq':6,"
		"'max_qp_wr':7,'max_cqe':8,'max_sge':9,'max_inline_data':0,'max_mr_size':4096},"
		"'fault':{'drop':0,'duplicate':1,'reorder':0.25,'corrupt':0.5,"
		"'seed':9223372036854775807}}";
	struct dpv_conf c;
	char err[1024] = "x", b[INET6_ADDRSTRLEN];
	char *json = dq(js);
	const struct dpv_conf_port *p;
	int r;

	r = dpv_conf_parse_string(json, "kitchen", &c, err, sizeof(err));
	free(json);
	CHECK(r == 0, "kitchen sink: %s", err);
	if (r != 0)
		return;
	CHECK(err[0] == '\0', "err not cleared on success: %s", err);
	CHECK(strcmp(c.source, "kitchen") == 0, "source %s", c.source);
	CHECK(c.mode == DPV_MODE_SHARED && c.progress == DPV_PROGRESS_LCORE && !c.sw_loopback,
	      "top-level");
	CHECK(strcmp(c.shared_socket, "/s/d.sock") == 0 && c.shared_idle_yield == 0, "shared: %s %u",
	      c.shared_socket, c.shared_idle_yield);
	CHECK(c.n_eal_args == 3 && strcmp(c.eal_args[0], "--no-pci") == 0 &&
		      strcmp(c.eal_args[2], "--in-memory") == 0,
	      "eal args");
	CHECK(strcmp(c.file_prefix, "Dpv-X_1") == 0 && !c.huge && c.memory_mb == 512 &&
		      c.log_level == 8 && !c.telemetry,
	      "eal scalars");
	CHECK(c.n_ports == 2, "n_ports %u", c.n_ports);
	p = &c.ports[0];
	CHECK(strcmp(p->name, "p_0") == 0 && p->type == DPV_DEV_PCI &&
		      strcmp(p->devargs, "0000:af:1f.7,txq_inline_max=0") == 0,
	      "pci port: %s", p->devargs);
	CHECK(p->mac_set && p->mac[0] == 0x0a && p->mac[5] == 0x0f, "mac");
	CHECK(strcmp(ip4(p->ipv4, b), "10.1.2.3") == 0 && p->ipv4_prefix == 31, "ipv4 /31");
	CHECK(p->n_ipv6 == 2 && strcmp(ip6(&p->ipv6[0].addr, b), "2001:db8::1") == 0 &&
		      p->ipv6[0].prefix == 128 && p->ipv6[1].prefix == 127,
	      "ipv6");
	CHECK(p->mtu == 9000 && p->rx_desc == 64 && p->tx_desc == 16384 && p->n_queues == 2,
	      "numbers");
	CHECK(p->n_lcores == 2 && p->lcores[0] == 0 && p->lcores[1] == 127, "lcores");
	CHECK(p->flow == DPV_FLOW_ISOLATE, "flow isolate %d", (int)p->flow);
	CHECK(p->dm_size == DPV_CONF_DEF_DM_SIZE, "default dm_size %u", p->dm_size);
	/* default mbufs grow to cover 2 * (64 + 16384) = 32896 */
	CHECK(p->mbufs == 65535, "auto mbufs %u", p->mbufs);
	p = &c.ports[1];
	CHECK(p->type == DPV_DEV_VDEV && strcmp(p->devargs, "net_tap0") == 0 && !p->mac_set,
	      "vdev port");
	CHECK(p->ipv4_prefix == 32 && p->mbufs == 128 && p->n_lcores == 1 && p->lcores[0] == 5,
	      "port 1");
	CHECK(p->flow == DPV_FLOW_OFF, "flow off %d", (int)p->flow);
	CHECK(p->dm_size == 0, "dm_size 0: %u", p->dm_size);
	CHECK(dpv_conf_port_by_name(&c, "p1") == p && dpv_conf_port_by_name(&c, "p2") == NULL,
	      "port_by_name");
	CHECK(c.max_qp == 1 && c.max_cq == 2 && c.max_mr == 3 && c.max_pd == 4 && c.max_ah == 5 &&
		      c.max_srq == 6 && c.max_qp_wr == 7 && c.max_cqe == 8 && c.max_sge == 9 &&
		      c.max_inline == 0 && c.max_mr_size == 4096,
	      "limits");
	CHECK(c.fault.drop == 0.0 && c.fault.duplicate == 1.0 && c.fault.reorder == 0.25 &&
		      c.fault.corrupt == 0.5 && c.fault.seed == 9223372036854775807ULL,
	      "fault");
	dpv_conf_free(&c);
	CHECK(c.n_eal_args == 0 && c.eal_args[0] == NULL, "free");
	dpv_conf_free(&c); /* twice is harmless */
}

static void check_default_values(const struct dpv_conf *c, const char *what)
{
	char b[INET6_ADDRSTRLEN];
	unsigned int i;

	CHECK(c->mode == DPV_MODE_EMBEDDED && c->progress == DPV_PROGRESS_INLINE &&
		      c->sw_loopback,
	      "%s: top-level", what);
	CHECK(strcmp(c->shared_socket, "/run/dpverbs/dpverbsd.sock") == 0 && c->shared_idle_yield == 256,
	      "%s: shared: %s, idle_yield %u", what, c->shared_socket, c->shared_idle_yield);
	CHECK(c->huge && c->memory_mb == 0 && c->log_level == DPV_CONF_DEF_LOG_LEVEL &&
		      c->file_prefix[0] == '\0' && c->n_eal_args == 0 && c->telemetry,
	      "%s: eal", what);
	CHECK(c->n_ports == 2, "%s: n_ports %u", what, c->n_ports);
	for (i = 0; i < 2 && i < c->n_ports; i++) {
		const struct dpv_conf_port *p = &c->ports[i];
		char name[8], ip[16];

		snprintf(name, sizeof(name), "dpv%u", i);
		snprintf(ip, sizeof(ip), "192.0.2.%u", i + 1);
		CHECK(strcmp(p->name, name) == 0 && p->type == DPV_DEV_RING, "%s: port %u", what, i);
		CHECK(strcmp(p->peer, i ? "dpv0" : "dpv1") == 0, "%s: peer %s", what, p->peer);
		CHECK(p->mac_set && p->mac[0] == 0x02 && p->mac[1] == 0x64 && p->mac[2] == 0x70 &&
			      p->mac[3] == 0x76 && p->mac[4] == 0 && p->mac[5] == i + 1,
		      "%s: mac", what);
		CHECK(strcmp(ip4(p->ipv4, b), ip) == 0 && p->ipv4_prefix == 24, "%s: ipv4 %s", what,
		      b);
		CHECK(p->n_ipv6 == 0 && p->mtu == 1500 && p->rx_desc == 1024 &&
			      p->tx_desc == 1024 && p->n_queues == 1 && p->n_lcores == 0 &&
			      p->mbufs == 8191 && p->flow == DPV_FLOW_AUTO,
		      "%s: port numbers", what);
	}
	CHECK(c->max_qp == DPV_DEF_MAX_QP && c->max_cq == DPV_DEF_MAX_CQ &&
		      c->max_mr == DPV_DEF_MAX_MR && c->max_pd == DPV_DEF_MAX_PD &&
		      c->max_ah == DPV_DEF_MAX_AH && c->max_srq == DPV_DEF_MAX_SRQ &&
		      c->max_qp_wr == DPV_DEF_MAX_QP_WR && c->max_cqe == DPV_DEF_MAX_CQE &&
		      c->max_sge == DPV_DEF_MAX_SGE && c->max_inline == DPV_DEF_MAX_INLINE &&
		      c->max_mr_size == DPV_DEF_MAX_MR_SIZE,
	      "%s: limits", what);
	CHECK(c->fault.drop == 0 && c->fault.duplicate == 0 && c->fault.reorder == 0 &&
		      c->fault.corrupt == 0 && c->fault.seed == 1,
	      "%s: fault", what);
}

static void test_default(const char *default_json_path)
{
	struct dpv_conf a, b;
	char err[1024];
	int r;

	unsetenv("DPVERBS_CONFIG");
	r = dpv_conf_load(NULL, &a, err, sizeof(err));
	CHECK(r == 0, "built-in default: %s", err);
	if (r != 0)
		return;
	CHECK(strcmp(a.source, "<built-in default>") == 0, "source %s", a.source);
	check_default_values(&a, "built-in");
	if (default_json_path == NULL) {
		CHECK(0, "config/default.json not given on the command line");
		dpv_conf_free(&a);
		return;
	}
	r = dpv_conf_load(default_json_path, &b, err, sizeof(err));
	CHECK(r == 0, "default.json: %s", err);
	if (r == 0) {
		CHECK(strcmp(b.source, default_json_path) == 0, "source %s", b.source);
		check_default_values(&b, "default.json");
		/* identical apart from the source (both have no EAL argument strings) */
		memcpy(b.source, a.source, sizeof(a.source));
		CHECK(memcmp(&a, &b, sizeof(a)) == 0,
		      "config/default.json differs from the built-in default");
		dpv_conf_free(&b);
	}
	dpv_conf_free(&a);
}

static void test_env(const char *some_file)
{
	struct dpv_conf c;
	char err[1024];
	int r;

	/* $DPVERBS_CONFIG selects the file when path is NULL */
	if (some_file) {
		setenv("DPVERBS_CONFIG", some_file, 1);
		r = dpv_conf_load(NULL, &c, err, sizeof(err));
		CHECK(r == 0 && strcmp(c.source, some_file) == 0, "env: %d %s", r,
		      r ? err : c.source);
		if (r == 0)
			dpv_conf_free(&c);
	}
	/* an explicit path wins over the environment */
	setenv("DPVERBS_CONFIG", "/nonexistent/dpverbs.json", 1);
	r = dpv_conf_load(NULL, &c, err, sizeof(err));
	CHECK(r == -1 && strcmp(err, "/nonexistent/dpverbs.json: cannot open: No such file or "
				     "directory") == 0,
	      "env missing file: %s", err);
	if (some_file) {
		r = dpv_conf_load(some_file, &c, err, sizeof(err));
		CHECK(r == 0 && strcmp(c.source, some_file) == 0, "explicit path over env: %s",
		      r ? err : c.source);
		if (r == 0)
			dpv_conf_free(&c);
	}
	/* empty counts as unset */
	setenv("DPVERBS_CONFIG", "", 1);
	r = dpv_conf_load(NULL, &c, err, sizeof(err));
	CHECK(r == 0 && strcmp(c.source, "<built-in default>") == 0, "empty env");
	if (r == 0)
		dpv_conf_free(&c);
	unsetenv("DPVERBS_CONFIG");
}

static void test_files_errors(void)
{
	struct dpv_conf c;
	char err[1024], path[] = "/tmp/dpv_conf_test_XXXXXX";
	FILE *f;
	int fd, r;

	r = dpv_conf_load("/nonexistent/x.json", &c, err, sizeof(err));
	CHECK(r == -1 && strcmp(err, "/nonexistent/x.json: cannot open: No such file or directory") == 0,
	      "missing file: %s", err);
	r = dpv_conf_load("/tmp", &c, err, sizeof(err));
	CHECK(r == -1 && strcmp(err, "/tmp: cannot read: Is a directory") == 0, "directory: %s",
	      err);
	/* syntax errors in files carry the path, line and column */
	fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp");
	if (fd < 0)
		return;
	f = fdopen(fd, "w");
	fputs("{\n  \"ports\": [\n    { \"name\": \"dpv0\" \"device\": {} }\n  ]\n}\n", f);
	fclose(f);
	r = dpv_conf_load(path, &c, err, sizeof(err));
	{
		char want[256];

		snprintf(want, sizeof(want), "%s:3:29: '}' expected near '\"device\"'", path);
		CHECK(r == -1 && strcmp(err, want) == 0, "file syntax: %s (want %s)", err, want);
	}
	/* a NUL byte inside the file */
	f = fopen(path, "w");
	fwrite("{\"ports\":[]}\0", 1, 13, f);
	fclose(f);
	r = dpv_conf_load(path, &c, err, sizeof(err));
	{
		char want[256];

		snprintf(want, sizeof(want), "%s:1:13: end of file expected near end of file",
			 path);
		CHECK(r == -1 && strcmp(err, want) == 0, "NUL byte: %s (want %s)", err, want);
	}
	/* an empty file */
	f = fopen(path, "w");
	fclose(f);
	r = dpv_conf_load(path, &c, err, sizeof(err));
	{
		char want[256];

		snprintf(want, sizeof(want), "%s:1:0: '[' or '{' expected near end of file", path);
		CHECK(r == -1 && strcmp(err, want) == 0, "empty file: %s (want %s)", err, want);
	}
	unlink(path);
	/* no error buffer, tiny error buffer, NULL arguments */
	r = dpv_conf_parse_string("{}", "t", &c, NULL, 0);
	CHECK(r == -1, "NULL err");
	memset(err, 'x', sizeof(err));
	r = dpv_conf_parse_string("{}", "t", &c, err, 8);
	CHECK(r == -1 && strcmp(err, "t: port") == 0, "truncated err: %s", err);
	r = dpv_conf_parse_string(NULL, "t", &c, err, sizeof(err));
	CHECK(r == -1 && strcmp(err, "t: no JSON text given") == 0, "NULL json: %s", err);
	CHECK(dpv_conf_port_by_name(NULL, "x") == NULL, "port_by_name(NULL)");
	dpv_conf_free(NULL);
}

/* ------------------------------------------------------------------ */
/* shipped files                                                       */

static void check_pair(const struct dpv_conf *c, const char *file, bool server)
{
	const struct dpv_conf_port *p = &c->ports[0];
	char b[INET6_ADDRSTRLEN];

	CHECK(c->n_ports == 1 && strcmp(p->name, "dpv0") == 0 && p->type == DPV_DEV_VDEV, "%s",
	      file);
	CHECK(strncmp(p->devargs, "net_memif0,", 11) == 0 &&
		      strstr(p->devargs, server ? "role=server" : "role=client") &&
		      strstr(p->devargs, "socket=/tmp/dpverbs-pair.sock") &&
		      strstr(p->devargs, "socket-abstract=no"),
	      "%s: devargs %s", file, p->devargs);
	CHECK(strcmp(c->file_prefix, server ? "dpv-pair-a" : "dpv-pair-b") == 0, "%s: prefix",
	      file);
	CHECK(strcmp(ip4(p->ipv4, b), server ? "192.0.2.1" : "192.0.2.2") == 0 &&
		      p->ipv4_prefix == 24,
	      "%s: ipv4", file);
	CHECK(p->mac_set && p->mtu == 9000 && c->progress == DPV_PROGRESS_INLINE, "%s: port",
	      file);
}

static void check_veth(const struct dpv_conf *c, const char *file, char side)
{
	const struct dpv_conf_port *p = &c->ports[0];
	char b[INET6_ADDRSTRLEN], want[64];

	CHECK(c->n_ports == 1 && strcmp(p->name, "dpv0") == 0 && p->type == DPV_DEV_VDEV, "%s",
	      file);
	snprintf(want, sizeof(want), "net_af_packet0,iface=dpv-veth-%c,", side);
	CHECK(strncmp(p->devargs, want, strlen(want)) == 0, "%s: devargs %s", file, p->devargs);
	snprintf(want, sizeof(want), "dpv-veth-%c", side);
	CHECK(strcmp(c->file_prefix, want) == 0, "%s: prefix", file);
	snprintf(want, sizeof(want), "198.51.100.%d", side == 'a' ? 1 : 2);
	CHECK(strcmp(ip4(p->ipv4, b), want) == 0 && p->ipv4_prefix == 24, "%s: ipv4", file);
	CHECK(!p->mac_set && p->mtu == 1500, "%s: port", file);
}

static void check_pci(const struct dpv_conf *c, const char *file)
{
	const struct dpv_conf_port *p = &c->ports[0];

	CHECK(c->n_ports == 1 && p->type == DPV_DEV_PCI && strcmp(p->devargs, "0000:03:00.0") == 0,
	      "%s: %s", file, p->devargs);
	CHECK(c->progress == DPV_PROGRESS_LCORE && p->n_queues == 2 && p->n_lcores == 2, "%s: lcores",
	      file);
	CHECK(p->mbufs >= (uint32_t)p->n_queues * (p->rx_desc + p->tx_desc), "%s: mbufs", file);
	CHECK(p->flow == DPV_FLOW_AUTO, "%s: flow %d", file, (int)p->flow);
}

static void check_xdp_example(const struct dpv_conf *c, const char *file)
{
	const struct dpv_conf_port *p = &c->ports[0];

	CHECK(c->n_ports == 1 && p->type == DPV_DEV_AF_XDP && strcmp(p->iface, "eth0") == 0,
	      "%s: af_xdp on eth0", file);
	CHECK(p->n_queues == 1 && p->xdp_mode == DPV_XDP_AUTO && !p->mtu_set && !p->mac_set,
	      "%s: queues %u mode %d", file, p->n_queues, (int)p->xdp_mode);
	CHECK(dpv_conf_port_follows_kernel(p) && strcmp(dpv_conf_port_netdev(p), "eth0") == 0,
	      "%s: follows eth0", file);
}

/* af_xdp and kernel_iface fields that parse, and what they become. */
static void test_kernel_ports(void)
{
	static const char *js =
		"{'ports':[{'name':'dpv0','device':{'type':'af_xdp','iface':'veth-x.1','queues':2,"
		"'xdp_mode':'native'},'queues':2,'mtu':1400},"
		"{'name':'dpv1','device':{'type':'af_xdp','iface':'eth1','xdp_mode':'generic'},"
		"'ipv4':'192.0.2.9/24'},"
		"{'name':'dpv2','device':{'type':'vdev','args':'net_memif0'},'kernel_iface':'dpvk0',"
		"'ipv4':'198.51.100.7/24'}]}";
	char *json = dq(js);
	struct dpv_conf c;
	char err[1024];
	int r = dpv_conf_parse_string(json, "t", &c, err, sizeof(err));

	CHECK(r == 0, "kernel ports: %s", err);
	if (r == 0) {
		const struct dpv_conf_port *a = &c.ports[0], *b = &c.ports[1], *k = &c.ports[2];
		CHECK(a->type == DPV_DEV_AF_XDP && a->n_queues == 2 && a->xdp_mode == DPV_XDP_NATIVE &&
		      a->mtu_set && a->mtu == 1400, "af_xdp port 0");
		CHECK(dpv_conf_port_follows_kernel(a) && !dpv_conf_port_follows_kernel(b),
		      "ports without addresses follow the kernel");
		CHECK(b->xdp_mode == DPV_XDP_GENERIC && !b->mtu_set && b->mtu == DPV_CONF_DEF_MTU,
		      "af_xdp port 1");
		CHECK(strcmp(dpv_conf_port_netdev(k), "dpvk0") == 0 && !dpv_conf_port_follows_kernel(k),
		      "kernel_iface: %s", k->kernel_iface);
		CHECK(dpv_conf_port_netdev(&c.ports[0]) == c.ports[0].iface, "netdev of af_xdp");
		CHECK(!a->lid_off && !k->lid_off, "lid auto by default");
		dpv_conf_free(&c);
	}
	free(json);
}

/* LIDs on RoCE: the low 16 bits of an IPv4 address in a /16 or longer */
static void test_lid_of(void)
{
	struct in_addr a;
	inet_pton(AF_INET, "198.51.100.2", &a);
	CHECK(dpv_conf_lid_of(a.s_addr, 24) == 0x6402, "lid of 198.51.100.2/24");
	CHECK(dpv_conf_lid_of(a.s_addr, 16) == 0x6402, "lid of 198.51.100.2/16");
	CHECK(dpv_conf_lid_of(a.s_addr, 15) == 0, "no lid for a /15");
	inet_pton(AF_INET, "10.0.200.1", &a);
	CHECK(dpv_conf_lid_of(a.s_addr, 24) == 0, "0xc801 is a multicast LID");
	inet_pton(AF_INET, "10.1.0.0", &a);
	CHECK(dpv_conf_lid_of(a.s_addr, 8) == 0 && dpv_conf_lid_of(0, 24) == 0, "no lid 0");
}

static void test_file(const char *path)
{
	const char *base = basename_of(path);
	struct dpv_conf c;
	char err[1024];
	int r;

	r = dpv_conf_load(path, &c, err, sizeof(err));
	CHECK(r == 0, "%s: %s", path, err);
	if (r != 0)
		return;
	CHECK(strcmp(c.source, path) == 0, "source");
	if (strcmp(base, "pair-a.json") == 0)
		check_pair(&c, base, true);
	else if (strcmp(base, "pair-b.json") == 0)
		check_pair(&c, base, false);
	else if (strcmp(base, "veth-a.json") == 0)
		check_veth(&c, base, 'a');
	else if (strcmp(base, "veth-b.json") == 0)
		check_veth(&c, base, 'b');
	else if (strcmp(base, "pci-example.json") == 0)
		check_pci(&c, base);
	else if (strcmp(base, "xdp-example.json") == 0)
		check_xdp_example(&c, base);
	else if (strcmp(base, "default.json") == 0)
		check_default_values(&c, base);
	dpv_conf_free(&c);
}

int main(int argc, char **argv)
{
	const char *default_path = NULL, *pair_a = NULL;
	int i;

	unsetenv("DPVERBS_CONFIG");
	for (i = 1; i < argc; i++) {
		if (strcmp(basename_of(argv[i]), "default.json") == 0)
			default_path = argv[i];
		if (strcmp(basename_of(argv[i]), "pair-a.json") == 0)
			pair_a = argv[i];
		test_file(argv[i]);
	}
	test_default(default_path);
	test_env(pair_a);
	test_kitchen_sink();
	test_kernel_ports();
	test_lid_of();
	test_files_errors();
	test_bad_table();

	return dpvt_finish();
}
