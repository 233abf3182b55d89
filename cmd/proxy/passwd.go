package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pgonion/pgonion/internal/scram"
)

func runPasswd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("passwd", flag.ContinueOnError)
	iterations := fs.Int("iterations", scram.DefaultIterations, "PBKDF2 iteration `count`")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: proxy passwd [--iterations N] USER < password\n\nReads a password from standard input and prints a line for --auth-file\nwith its SCRAM-SHA-256 verifier (the password itself is not stored).")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want exactly one USER argument")
	}
	user := fs.Arg(0)
	if strings.ContainsAny(user, "\n\r") {
		return usagef("user names cannot contain line breaks")
	}
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil && err != io.EOF {
		return err
	}
	password := strings.TrimRight(line, "\r\n")
	if password == "" {
		return usagef("empty password on standard input")
	}
	v, err := scram.NewVerifier(password, *iterations)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%q %q\n", user, v.String())
	return nil
}
