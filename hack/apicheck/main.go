package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], ".", os.Stdout, os.Stderr))
}

// Exit statuses of the command.
const (
	exitOK      = 0 // the description matches, or was written
	exitChanged = 1 // the API differs from the description
	exitError   = 2 // bad usage, or the API could not be read
)

// run is the command over the module in dir.
func run(args []string, dir string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("apicheck", flag.ContinueOnError)
	flags.SetOutput(stderr)
	write := flags.Bool("w", false, "write the description to FILE instead of checking it")
	flags.Usage = func() {
		printf(stderr, "usage: go run ./hack/apicheck [-w] FILE\n")
		printf(stderr, "Checks that FILE (relative to the module's root) describes the exported API of the\n")
		printf(stderr, "module's public packages, and says what changed if not; -w writes FILE instead.\n")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		return exitError
	}
	if flags.NArg() != 1 {
		flags.Usage()
		return exitError
	}
	file := flags.Arg(0)

	if *write {
		text, err := generate(dir)
		if err != nil {
			printf(stderr, "apicheck: %v\n", err)
			return exitError
		}
		if err := os.WriteFile(filepath.Join(dir, file), text, 0o644); err != nil {
			printf(stderr, "apicheck: %v\n", err)
			return exitError
		}
		printf(stdout, "apicheck: wrote %s (%d lines)\n", file, countLines(text))
		return exitOK
	}

	recorded, err := os.ReadFile(filepath.Join(dir, file))
	if errors.Is(err, fs.ErrNotExist) {
		printf(stderr, "apicheck: %s does not exist; write it with `make api` and commit it\n", file)
		return exitError
	}
	if err != nil {
		printf(stderr, "apicheck: %v\n", err)
		return exitError
	}
	text, err := generate(dir)
	if err != nil {
		printf(stderr, "apicheck: %v\n", err)
		return exitError
	}
	return check(file, recorded, text, stdout, stderr)
}

// generate is the description of the public API of the module in dir.
func generate(dir string) ([]byte, error) {
	pkgs, err := PublicPackages(dir)
	if err != nil {
		return nil, err
	}
	loaded, err := Load(dir, pkgs)
	if err != nil {
		return nil, err
	}
	return Text(loaded)
}

// check compares the description recorded in file with text, the one the code gives now,
// and reports what changed.
func check(file string, recorded, text []byte, stdout, stderr io.Writer) int {
	if bytes.Equal(recorded, text) {
		printf(stdout, "apicheck: %s describes the exported API (%d lines)\n", file, countLines(text))
		return exitOK
	}
	changes, err := Compare(lines(recorded), lines(text))
	if err != nil {
		printf(stderr, "apicheck: %s: %v\nRewrite it with `make api` and read its diff.\n", file, err)
		return exitError
	}
	if len(changes) == 0 {
		printf(stderr, "apicheck: %s describes the same API, but not as `make api` writes it (edited by hand?); run `make api`\n", file)
		return exitChanged
	}
	Report(stderr, file, changes)
	return exitChanged
}

// printf writes a message for a person; an error writing it is nothing the command can
// report anywhere else.
func printf(w io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(w, format, args...)
}

func lines(text []byte) []string {
	return strings.Split(strings.TrimSuffix(string(text), "\n"), "\n")
}

// countLines counts the description's lines that describe an identifier.
func countLines(text []byte) int {
	n := 0
	for _, l := range lines(text) {
		if l != "" && !strings.HasPrefix(l, "#") {
			n++
		}
	}
	return n
}
