// Command proxy is an encrypting SQL proxy for PostgreSQL in the style of
// CryptDB. Clients connect to it as if it were PostgreSQL.
//
// Usage:
//
//	proxy serve   --backend DSN [flags]   relay clients to a PostgreSQL server
//	proxy demo    [flags]                 run the proxy on a throwaway PostgreSQL
//	proxy passwd  USER                    print an auth-file line for USER
//	proxy keys    init|check|rotate-master create, check and re-wrap the key store
//	proxy migrate --backend DSN [--check] create or upgrade the schema "pgonion"
//	proxy status  --backend DSN           encrypted columns, layers and leakage
//	proxy columns list|set|plan           the managed columns, their policies, a workload's needs
//	proxy encrypt TABLE [COLUMN ...]      encrypt existing plaintext in place, online
//	proxy decrypt TABLE [COLUMN ...]      turn encrypted columns back into plaintext
//	proxy version
//
// Run `proxy COMMAND --help` for the flags of a command. Every flag can also
// be set with an environment variable PGONION_<FLAG> (upper case, '-' as '_').
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"strings"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

var commands = []command{
	{"serve", "relay clients to a PostgreSQL server", runServe},
	{"demo", "run the proxy in front of a throwaway PostgreSQL", runDemo},
	{"passwd", "print an auth-file line with a SCRAM-SHA-256 verifier", runPasswd},
	{"migrate", "create or upgrade the proxy's schema in the backend database", runMigrate},
	{"status", "show every encrypted column, its onions and layers, and what the server can learn", runStatus},
	{"columns", "list the managed columns, declare how a column is stored, or plan a workload (list, set, plan)", runColumns},
	{"encrypt", "encrypt existing plaintext columns in place, online (adopt a table)", runEncrypt},
	{"decrypt", "turn encrypted columns back into plaintext in place, online", runDecrypt},
	{"keys", "create, check and re-wrap the key store (init, check, rotate-master)", runKeys},
	{"version", "print the version", func([]string, io.Writer, io.Writer) error { fmt.Println("proxy", version); return nil }},
}

func main() {
	// PGONION_CPUPROFILE=FILE writes a CPU profile of the whole run, for
	// performance work (go tool pprof FILE).
	if path := os.Getenv("PGONION_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "proxy: PGONION_CPUPROFILE: %v\n", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "proxy: PGONION_CPUPROFILE: %v\n", err)
			os.Exit(1)
		}
		code := run(os.Args[1:], os.Stdout, os.Stderr)
		pprof.StopCPUProfile()
		f.Close()
		os.Exit(code)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			err := c.run(args[1:], stdout, stderr)
			switch {
			case err == nil:
				return 0
			case errors.Is(err, flag.ErrHelp):
				return 0
			case errors.As(err, new(*usageError)):
				fmt.Fprintf(stderr, "proxy %s: %v\n", c.name, err)
				fmt.Fprintf(stderr, "hint: run 'proxy %s --help'\n", c.name)
				return 2
			default:
				fmt.Fprintf(stderr, "proxy %s: %v\n", c.name, err)
				return 1
			}
		}
	}
	fmt.Fprintf(stderr, "proxy: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "proxy: an encrypting SQL proxy for PostgreSQL")
	fmt.Fprintln(w, "\nUsage: proxy COMMAND [flags]\n\nCommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'proxy COMMAND --help' for a command's flags.")
}

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// parseFlags parses args, after filling unset flags from PGONION_* variables.
func parseFlags(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stderr)
			fs.Usage()
			return err
		}
		return &usageError{err.Error()}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		env := "PGONION_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(env); ok && !set[f.Name] && err == nil {
			if e := fs.Set(f.Name, v); e != nil {
				err = usagef("%s=%q: %v", env, v, e)
			}
		}
	})
	if err != nil {
		return err
	}
	if fs.NArg() > 0 && fs.Name() != "passwd" {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// logFlags are the logging flags every long-running command has.
type logFlags struct {
	level  string
	format string
}

func (l *logFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.level, "log-level", "info", "log level: debug, info, warn or error (query texts are logged at debug only)")
	fs.StringVar(&l.format, "log-format", "text", "log format: text or json")
}

func (l *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.level)); err != nil {
		return nil, usagef("bad --log-level %q: want debug, info, warn or error", l.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch l.format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usagef("bad --log-format %q: want text or json", l.format)
}
