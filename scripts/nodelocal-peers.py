#!/usr/bin/env python3
"""Peers of scripts/nodelocal-netns-test.sh (needs dnspython).

  kube-dns --bind IP   a fake cluster DNS on UDP port 53: api.default.svc.cluster.local A
                       10.96.7.7, _http._tcp.api.default.svc.cluster.local SRV, other names
                       NXDOMAIN with an SOA (every TTL 30 s); prints "query NAME TYPE" per query
  ask NAME TYPE        asks the resolver /etc/resolv.conf names (in a namespace: the file ip
                       netns exec mounts) and prints "nameservers" then the sorted answers, or
                       the rcode
"""

import argparse
import socket
import sys

import dns.flags
import dns.message
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.resolver
import dns.rrset

ZONE = "cluster.local."
RECORDS = {
    ("api.default.svc.cluster.local.", dns.rdatatype.A): ["10.96.7.7"],
    ("_http._tcp.api.default.svc.cluster.local.", dns.rdatatype.SRV): ["0 100 80 api.default.svc.cluster.local."],
}


def kube_dns(bind):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((bind, 53))
    print("listening", flush=True)
    while True:
        data, peer = sock.recvfrom(4096)
        try:
            query = dns.message.from_wire(data)
        except Exception as error:  # a malformed query is logged and dropped
            print("malformed", repr(error), flush=True)
            continue
        question = query.question[0]
        name = question.name.to_text().lower()
        print("query", name, dns.rdatatype.to_text(question.rdtype), flush=True)
        reply = dns.message.make_response(query)
        reply.flags |= dns.flags.AA
        answers = RECORDS.get((name, question.rdtype))
        if answers:
            reply.answer.append(dns.rrset.from_text(question.name, 30, "IN", question.rdtype, *answers))
        elif not any(key[0] == name for key in RECORDS):
            reply.set_rcode(dns.rcode.NXDOMAIN)
        if not answers:
            reply.authority.append(dns.rrset.from_text(
                ZONE, 30, "IN", "SOA", "ns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 30"))
        sock.sendto(reply.to_wire(), peer)


def ask(name, rdtype):
    resolver = dns.resolver.Resolver()  # reads /etc/resolv.conf
    resolver.cache = None
    print("nameservers", ",".join(resolver.nameservers))
    try:
        answer = resolver.resolve(name, rdtype, search=False, lifetime=5)
        print(" ".join(sorted(item.to_text() for item in answer)))
    except dns.resolver.NXDOMAIN:
        print("NXDOMAIN")
    except dns.resolver.NoAnswer:
        print("NODATA")
    except Exception as error:  # a timeout or SERVFAIL is a wrong answer the caller reports
        print("error", repr(error))
        return 1
    return 0


def main():
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("kube-dns")
    serve.add_argument("--bind", required=True)
    client = commands.add_parser("ask")
    client.add_argument("name")
    client.add_argument("type")
    args = parser.parse_args()
    if args.command == "kube-dns":
        kube_dns(args.bind)
    else:
        sys.exit(ask(args.name, args.type))


if __name__ == "__main__":
    main()
