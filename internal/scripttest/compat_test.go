package scripttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stubGo is a go command that answers hack/compat.sh's module queries from a made-up
// module graph (the floor v0.35, e2e at v0.37, releases up to a v0.38 pre-release) and
// succeeds at every other command. It records each command with the GOTOOLCHAIN it ran
// under and the directory it ran in (a target's scratch directory is named after the
// target). A command whose "GOTOOLCHAIN/directory/verb" is in STUB_FAIL fails.
const stubGo = `#!/usr/bin/env bash
mods='k8s.io/api k8s.io/client-go k8s.io/cloud-provider'
here=${PWD##*/}
echo "GOTOOLCHAIN=$GOTOOLCHAIN in=$here go $*" >>"$STUB_LOG"
case "$*" in
"list -m -f {{.Version}} k8s.io/client-go")
	if [[ $here == e2e ]]; then echo v0.37.2; else echo v0.35.10; fi
	exit 0 ;;
"list -m -f {{.Path}} {{.Version}} all")
	echo github.com/ccmkit/ccmkit
	for m in $mods; do echo "$m v0.35.10"; done
	echo k8s.io/klog/v2 v2.130.1
	echo sigs.k8s.io/yaml v1.4.0
	exit 0 ;;
"list -m -f {{if not .Replace}}{{.Path}} {{.Version}}{{end}} all")
	for m in $mods; do echo "$m v0.37.2"; done
	echo sigs.k8s.io/yaml v1.6.0
	exit 0 ;;
"list -m -versions "*)
	echo "$4 v0.35.10 v0.36.4 v0.37.1 v0.37.2 v0.38.0-alpha.2 v0.38.0-beta.0"
	exit 0 ;;
"env GOVERSION")
	if [[ $GOTOOLCHAIN == local ]]; then echo go1.26.8; else echo "$GOTOOLCHAIN"; fi
	exit 0 ;;
esac
if [[ " $STUB_FAIL " == *" $GOTOOLCHAIN/$here/$1 "* ]]; then
	echo "stub: go $1 fails in $here"
	exit 1
fi
`

// runCompat runs hack/compat.sh with the targets in a git work tree of its own (the script
// copies the tracked files) with the stub go first on PATH, and returns its output, its
// exit code and the stub's record of the commands it ran.
func runCompat(t *testing.T, fail string, targets ...string) (string, int, []string) {
	t.Helper()
	script, err := os.ReadFile(filepath.Join("..", "..", "hack", "compat.sh"))
	require.NoError(t, err)
	root := t.TempDir()
	files := map[string]string{
		"hack/compat.sh": string(script),
		"go.mod":         "module github.com/ccmkit/ccmkit\n",
		"e2e/go.mod":     "module github.com/ccmkit/ccmkit/e2e\n",
	}
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "go"), []byte(stubGo), 0o755))
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}} {
		out, err := exec.Command("git", append([]string{"-C", root}, args...)...).CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	log := filepath.Join(t.TempDir(), "go.log")
	cmd := exec.Command("bash", append([]string{filepath.Join(root, "hack", "compat.sh")}, targets...)...)
	// The caller's environment but for what the script reads, so that its defaults hold.
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "COMPAT_") && !slices.Contains([]string{"PATH", "GOTOOLCHAIN", "TMPDIR"}, name) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env,
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GOTOOLCHAIN=local",
		"TMPDIR="+t.TempDir(),
		"STUB_LOG="+log,
		"STUB_FAIL="+fail)
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "compat.sh did not run: %s", out)
		code = exit.ExitCode()
	}
	record, err := os.ReadFile(log)
	require.NoError(t, err, "the stub go recorded nothing; compat.sh said:\n%s", out)
	return string(out), code, strings.Split(strings.TrimSpace(string(record)), "\n")
}

// TestCompatToolchains: the pre-release target runs every go command under the pinned Go
// release, the supported ones and the script's own queries (the floor, the versions of
// each minor) under the Go at hand, and the line of each target says which Go built it.
func TestCompatToolchains(t *testing.T) {
	out, code, record := runCompat(t, "", "0.37", "0.38-pre")
	require.Equal(t, 0, code, out)
	want := map[string]string{"0.37": "GOTOOLCHAIN=local", "0.38-pre": "GOTOOLCHAIN=go1.27.3"}
	seen := map[string][]string{}
	for _, line := range record {
		fields := strings.Fields(line)
		require.GreaterOrEqual(t, len(fields), 4, line)
		target := strings.TrimPrefix(fields[1], "in=")
		toolchain, ok := want[target]
		if !ok {
			toolchain = "GOTOOLCHAIN=local" // outside the targets: the caller's
		}
		assert.Equal(t, toolchain, fields[0], line)
		seen[target] = append(seen[target], strings.Join(fields[2:4], " "))
	}
	for target := range want {
		assert.Subset(t, seen[target], []string{"go get", "go build", "go test"}, "%s ran %v", target, seen[target])
	}
	assert.Contains(t, out, "0.37      PASS  k8s.io/client-go@v0.37.2 k8s.io/cloud-provider@v0.37.2 go1.26.8 (")
	assert.Contains(t, out, "0.38-pre  PASS  k8s.io/client-go@v0.38.0-beta.0 k8s.io/cloud-provider@v0.38.0-beta.0 go1.27.3 (")
	assert.Contains(t, out, "compat: every target passed")
}

// TestCompatVerdicts: a failing target, the pre-release's as a supported minor's, is
// reported as a failure, with its log, and fails the run; the other targets still run.
func TestCompatVerdicts(t *testing.T) {
	tests := []struct {
		name     string
		fail     string
		wantCode int
		want     []string
	}{
		{
			name: "every target passes",
			want: []string{
				"0.37      PASS  ",
				"0.38-pre  PASS  ",
				"compat: every target passed",
			},
		},
		{
			name:     "pre-release fails its tests",
			fail:     "go1.27.3/0.38-pre/test",
			wantCode: 1,
			want: []string{
				"0.37      PASS  ",
				"0.38-pre  FAIL  k8s.io/client-go@v0.38.0-beta.0 k8s.io/cloud-provider@v0.38.0-beta.0 go1.27.3 (",
				"    stub: go test fails in 0.38-pre",
				"compat: FAILED: 0.38-pre",
			},
		},
		{
			name:     "supported minor fails to build",
			fail:     "local/0.37/build",
			wantCode: 1,
			want: []string{
				"0.37      FAIL  k8s.io/client-go@v0.37.2 k8s.io/cloud-provider@v0.37.2 go1.26.8 (",
				"    stub: go build fails in 0.37",
				"0.38-pre  PASS  ",
				"compat: FAILED: 0.37",
			},
		},
		{
			name:     "both fail",
			fail:     "local/0.37/build go1.27.3/0.38-pre/get",
			wantCode: 1,
			want: []string{
				"    stub: go build fails in 0.37",
				"    stub: go get fails in 0.38-pre",
				"compat: FAILED: 0.37 0.38-pre",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code, _ := runCompat(t, tt.fail, "0.37", "0.38-pre")
			assert.Equal(t, tt.wantCode, code, out)
			for _, w := range tt.want {
				assert.Contains(t, out, w)
			}
			assert.NotContains(t, out, "allowed", "no target's failure is allowed")
			if tt.wantCode != 0 {
				assert.NotContains(t, out, "compat: every target passed")
			}
		})
	}
}
