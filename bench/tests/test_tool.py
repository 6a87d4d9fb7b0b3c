"""Unit tests of the benchmark tool (scripts/test.sh runs them): the docs' tables equal what
`bench/bench report` renders from the committed results, every results file renders, and the
parsers of the tools' output read what the tools print."""
import argparse
import contextlib
import io
import tempfile
import unittest
from pathlib import Path

from bench import __main__ as cli
from bench import allocs, connect_by_ip, dns_listener, perf_summary, pinned, report
from bench.lib import results, wrk


class DocsTables(unittest.TestCase):
    def test_docs_tables_are_what_the_committed_results_render(self):
        self.assertEqual(report.check(), [])

    def test_every_results_file_has_the_fields_the_docs_name(self):
        for path in sorted(results.RESULTS.glob("*.json")):
            with self.subTest(path.name):
                doc = results.load(path)
                self.assertEqual(doc["name"], path.stem)
                self.assertIn(doc["source"], ("measured", "transcribed"))
                for key in ("kind", "command", "machine", "versions", "parameters", "results"):
                    self.assertIn(key, doc)
                if doc["source"] == "transcribed":
                    self.assertTrue(doc.get("note"), "a transcribed file says where its figures come from")
                self.assertTrue(report.render(doc).startswith("*"))

    def test_a_stale_table_is_caught_and_rewritten(self):
        with tempfile.TemporaryDirectory() as d:
            doc = {"kind": "connect-by-ip", "name": "example", "source": "measured", "command": "bench/bench x",
                   "revision": "abc", "machine": {"cpu": "CPU", "cores": 2, "kernel": "6.1", "load_average": [0.5]},
                   "versions": {"curl": "7.88.1"}, "parameters": {"requests": 3},
                   "results": {"cases": {c: {"median_ms": 2.0, "p90_ms": 3.0} for c in connect_by_ip.CASES}}}
            results.write(doc, Path(d) / "example.json")
            page = Path(d) / "page.md"
            page.write_text("intro\n<!-- bench:table example -->\nstale\n<!-- /bench:table -->\nend\n")
            self.assertEqual(len(report.check(d, files=[page])), 1)
            page.write_text(report.rewrite(page.read_text(), d))
            self.assertEqual(report.check(d, files=[page]), [])
            text = page.read_text()
            self.assertTrue(text.startswith("intro\n<!-- bench:table example -->\n*Measured at `abc`"))
            self.assertIn("| dead (refused) | 2.0 | 3.0 | 1.00 |", text)
            self.assertTrue(text.endswith("<!-- /bench:table -->\nend\n"))


class Parsers(unittest.TestCase):
    def test_strace_summary(self):
        text = """% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 45.00    0.010000           1     10000           epoll_wait
 30.00    0.006000           1      5000      12 read
 25.00    0.005000           1      5000           writev
------ ----------- ----------- --------- --------- ----------------
100.00    0.021000           1     20000        12 total
"""
        calls, per = pinned.parse_strace_summary(text)
        self.assertEqual(calls, 20000)
        self.assertEqual(per, {"epoll_wait": 10000, "read": 5000, "writev": 5000})

    def test_dnsperf(self):
        out = """Statistics:
  Queries sent:         1000
  Queries completed:    998 (99.80%)
  Queries lost:         2 (0.20%)
  Queries per second:   51234.567890
> NOERROR bench-01.test A 0.000250
> NOERROR bench-02.test A 0.001000
"""
        r = dns_listener.parse_dnsperf(out, verbose=True)
        self.assertAlmostEqual(r["qps"], 51234.56789)
        self.assertEqual(r["lost"], 2)
        self.assertEqual([round(x, 3) for x in r["latencies_ms"]], [0.25, 1.0])

    def test_wrk_json_line(self):
        text = 'Running 1s test\nBENCH_JSON {"requests": 5, "errors": {"connect": 0}}\n'
        self.assertEqual(wrk.parse(text)["requests"], 5)
        self.assertEqual(wrk.parse("SOAK_JSON {\"requests\": 7}\n", "SOAK_JSON")["requests"], 7)

    def test_connect_by_ip_summary(self):
        samples = {case: [float(i) for i in range(1, 31)] for case in connect_by_ip.CASES}
        s = connect_by_ip.summarize(samples)
        self.assertEqual(s["dead_cold"]["median_ms"], 15.5)
        self.assertEqual(s["dead_cold"]["p90_ms"], 27.0)  # the shell version's awk: v[int(NR*0.9)]


    def test_profile_samples_go_to_the_innermost_part_of_the_forward_path(self):
        header = "httpdns-proxy 7 [001] 10.000000: 1000 cpu-clock:pppH:"
        def frame(sym, module):
            return "\t    7f00 %s+0x10 (%s)" % (sym, module)
        core, me, kernel = "/usr/lib/swift/linux/libswiftCore.so", "/opt/httpdns-proxy", "[kernel.kallsyms]"
        intake = [header, frame("swift_retain", core), frame("static RequestTarget.parseAbsolute(_:)", me),
                  frame("ClientConnectionHandler.channelRead(context:data:)", me),
                  frame("ClientRequestReader.decode(context:buffer:)", me),
                  frame("ByteToMessageHandler.decodeLoop(context:decodeMode:)", me)]
        codec = [header, frame("HeadParser.scan(_:)", me), frame("ClientRequestReader.decode(context:buffer:)", me)]
        log_write = [header, frame("ext4_buffered_write_iter", kernel), frame("__GI___libc_write", "/lib/libc.so.6"),
                     frame("AccessLogWriter.drain(_:)", me)]
        text = perf_summary.summarize_script("\n\n".join("\n".join(s) for s in (intake, codec, codec, log_write)))
        self.assertIn("4 samples, 25.0 % in the kernel", text)
        self.assertIn(" 25.0 %  user: request intake: target, route, request id, checks", text)
        self.assertIn(" 50.0 %  user: HTTP/1 codec: head parsing", text)
        self.assertIn(" 25.0 %  kernel: write (the access log)", text)


class CommandLine(unittest.TestCase):
    def test_every_subcommand_parses_its_help(self):
        for name, _module, _help, _options in cli.COMMANDS:
            with self.subTest(name), contextlib.redirect_stdout(io.StringIO()):
                with self.assertRaises(SystemExit) as exit_:
                    cli.parser().parse_args([name, "--help"])
                self.assertEqual(exit_.exception.code, 0)

    def test_results_default_to_the_committed_folder(self):
        args = cli.parser().parse_args(["dns", "--proxy-bin", "x"])
        self.assertEqual(Path(args.results), results.RESULTS)
        self.assertEqual(args.name, "dns")
        self.assertIsInstance(args, argparse.Namespace)

    def test_an_allocation_over_its_threshold_fails_and_a_whole_one_under_is_noted(self):
        figure = {"access-log-off": {"per_request": 12.02}, "access-log-on": {"per_request": 13.01}}
        failures, notes = allocs.judge(figure, {"access-log-off": 12.5, "access-log-on": 12.5})
        self.assertEqual(failures, ["access-log-on: 13.010 allocations per request, threshold 12.50"])
        self.assertEqual(notes, [])
        failures, notes = allocs.judge({"access-log-off": {"per_request": 4.0}}, {"access-log-off": 12.5})
        self.assertEqual(failures, [])
        self.assertIn("lower it", notes[0])
        failures, _ = allocs.judge({"new-variant": {"per_request": 1.0}}, {})
        self.assertEqual(len(failures), 1)

    def test_committed_allocation_thresholds_cover_every_variant(self):
        import json
        thresholds = json.loads(allocs.THRESHOLDS.read_text())["per_request"]
        self.assertEqual(set(thresholds), set(allocs.VARIANTS))

    def test_recorded_commands_name_no_directory_outside_the_repository(self):
        inside = str(results.REPO / "bench" / "out" / "x.log")
        self.assertEqual(
            results.shown_command(["ab", "--base-bin", "/opt/builds/old/httpdns-proxy", "--out=/var/tmp/o", inside]),
            "bench/bench ab --base-bin httpdns-proxy --out=o bench/out/x.log",
        )
        self.assertEqual(results.relpath("relative/path"), "relative/path")

    def test_committed_results_name_no_directory_outside_the_repository(self):
        for path in sorted(results.RESULTS.glob("*.json")):
            with self.subTest(path.name):
                self.assertNotRegex(path.read_text(), r'"/(tmp|home|root|work|var|opt)/')
                self.assertNotRegex(path.read_text(), r'[ =]/(tmp|home|root|work|var|opt)/')


if __name__ == "__main__":
    unittest.main()
