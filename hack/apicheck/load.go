package main

import (
	"bytes"
	"errors"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
)

// notPublic are the module's top-level directories whose packages are not its public API,
// however they are named: worked examples meant to be copied (and one registers a cloud
// provider in init), the benchmark and its baseline, and the manifests' tests.
// Packages under an internal directory and main packages are never public either.
var notPublic = []string{"bench", "deploy", "examples"}

// PublicPackages lists the import paths of the public packages of the module in dir,
// sorted: the packages of `go list ./...` that are not main packages, have no internal
// path element and are not under one of the notPublic directories.
func PublicPackages(dir string) ([]string, error) {
	out, err := goList(dir, "-f", "{{.Module.Path}}\t{{.ImportPath}}\t{{.Name}}", "./...")
	if err != nil {
		return nil, err
	}
	var pkgs []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Split(line, "\t")
		if len(fields) != 3 {
			return nil, fmt.Errorf("go list printed %q, want module, import path and name", line)
		}
		module, importPath, name := fields[0], fields[1], fields[2]
		if name != "main" && public(module, importPath) {
			pkgs = append(pkgs, importPath)
		}
	}
	sort.Strings(pkgs)
	return pkgs, nil
}

func public(module, importPath string) bool {
	rel := strings.TrimPrefix(strings.TrimPrefix(importPath, module), "/")
	for _, elem := range strings.Split(importPath, "/") {
		if elem == "internal" {
			return false
		}
	}
	top, _, _ := strings.Cut(rel, "/")
	for _, dir := range notPublic {
		if top == dir {
			return false
		}
	}
	return true
}

// Load imports the packages pkgs of the module in dir from their export data: the type
// information the compiler writes for each package, which `go list -export` takes from the
// build cache (or compiles, like go build, when it is not there yet). Nothing is type
// checked from source.
func Load(dir string, pkgs []string) ([]*types.Package, error) {
	if len(pkgs) == 0 {
		return nil, errors.New("no packages to describe")
	}
	out, err := goList(dir, append([]string{"-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, pkgs...)...)
	if err != nil {
		return nil, err
	}
	exports := make(map[string]string)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		importPath, file, ok := strings.Cut(line, "\t")
		if ok && file != "" {
			exports[importPath] = file
		}
	}
	lookup := func(importPath string) (io.ReadCloser, error) {
		file, ok := exports[importPath]
		if !ok {
			return nil, fmt.Errorf("go list -export gave no export data for %s", importPath)
		}
		return os.Open(file)
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", lookup)
	loaded := make([]*types.Package, 0, len(pkgs))
	for _, p := range pkgs {
		pkg, err := imp.Import(p)
		if err != nil {
			return nil, fmt.Errorf("reading the export data of %s: %w", p, err)
		}
		loaded = append(loaded, pkg)
	}
	return loaded, nil
}

// goList runs go list in dir and returns what it printed; its error output is in the
// error.
func goList(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

// Text is the whole API description of pkgs: the header, then every package's lines
// (Describe), sorted, so that a package's lines stay together and the file changes only
// where the API does.
func Text(pkgs []*types.Package) ([]byte, error) {
	var lines []string
	for _, pkg := range pkgs {
		l, err := Describe(pkg)
		if err != nil {
			return nil, err
		}
		lines = append(lines, l...)
	}
	sort.Strings(lines)
	var b bytes.Buffer
	b.WriteString(header)
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	return b.Bytes(), nil
}

// header opens the description file; lines starting with # are comments.
const header = `# The exported API of the public packages of github.com/ccmkit/ccmkit (docs/versioning.md),
# one line per exported identifier. Written by ` + "`make api`" + `; ` + "`make api-check`" + ` (part of make
# test) fails when the code's API differs from this file. Do not edit it by hand.
`
