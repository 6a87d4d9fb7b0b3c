import Testing
@testable import ProxyConfig

/// The command line read from the option table: the syntax ArgumentParser gave users, with its
/// error wording.
@Suite struct CommandLineArgumentsTests {
    @Test func valuesFollowTheFlagOrAnEqualsSign() throws {
        #expect(try flags(["--listen", "127.0.0.1:0", "--via=a=b", "--log-level=debug"])
            == ["listen": ["127.0.0.1:0"], "via": ["a=b"], "log-level": ["debug"]])
        // A value may look like anything but an option.
        #expect(try flags(["--access-log", "-"]) == ["access-log": ["-"]])
        #expect(try flags(["--via=--x"]) == ["via": ["--x"]])
    }

    @Test func anUnknownFlagGetsADidYouMean() {
        #expect(throws: CommandLineError.unknownOption("--lisen", suggestion: "--listen")) { try flags(["--lisen", "x"]) }
        #expect(throws: CommandLineError.unknownOption("--connect_timeout", suggestion: "--connect-timeout")) {
            try flags(["--connect_timeout=3s"])
        }
        #expect(throws: CommandLineError.unknownOption("--frobnicate", suggestion: nil)) { try flags(["--frobnicate"]) }
        #expect(throws: CommandLineError.unknownOption("-l", suggestion: nil)) { try flags(["-l", "x"]) }
        #expect(CommandLineError.unknownOption("--lisen", suggestion: "--listen").description
            == "Unknown option '--lisen'. Did you mean '--listen'?")
    }

    @Test func aMissingValueIsNamedWithItsPlaceholder() {
        #expect(throws: CommandLineError.missingValue(.listen)) { try flags(["--listen"]) }
        #expect(throws: CommandLineError.missingValue(.listen)) { try flags(["--listen", "--via", "x"]) }
        #expect(CommandLineError.missingValue(.listen).description == "Missing value for '--listen <host:port>'")
    }

    @Test func positionalWordsHelpAndTheTerminatorAreKept() throws {
        let parsed = try CommandLineArguments(parsing: ["a.example", "--provider", "system", "-h", "--", "--listen"])
        #expect(parsed.positional == ["a.example", "--listen"])
        #expect(parsed.flagValues == ["provider": ["system"]])
        #expect(parsed.wantsHelp)
        #expect(try !CommandLineArguments(parsing: ["--listen", "x"]).wantsHelp)
    }

    @Test func theParsedFlagsLoadWithTheirSourceNamed() throws {
        let error = loadError(flags: try flags(["--connect-timeout=abc"]))
        #expect(error?.description.contains("invalid value 'abc' for --connect-timeout (from command-line flag --connect-timeout)") == true,
                "\(String(describing: error))")
    }
}
