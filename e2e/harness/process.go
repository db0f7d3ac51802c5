package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/provider"
)

// CCMPackage is the cloud-controller-manager BuildCCM builds: examples/ccm, the command a
// new user runs, with the built-in provider over the fake cloud (--cloud-provider=ccmkit).
const CCMPackage = "github.com/ccmkit/ccmkit/examples/ccm"

// BuildCCM builds CCMPackage into dir and returns the binary's path. It runs `go build` in
// the working directory, which must be inside the e2e module (the tests' and the demo's):
// the build then reuses the packages the e2e module compiled, at its versions.
func BuildCCM(ctx context.Context, dir string) (string, error) {
	return Build(ctx, dir, "ccm", CCMPackage)
}

// Build builds the main package pkg into dir/name and returns the binary's path, as
// BuildCCM does (examples/restcloud and its restcloud-server, for one).
func Build(ctx context.Context, dir, name, pkg string) (string, error) {
	bin := filepath.Join(dir, name)
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, out.String())
	}
	return bin, nil
}

// WithStateFile returns cloudConfig with the fake section's stateFile set to path (the
// section is added when the file has none), comments and the other keys kept.
func WithStateFile(cloudConfig []byte, path string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(cloudConfig, &doc); err != nil {
		return nil, fmt.Errorf("cloud config: %w", err)
	}
	if doc.Kind == 0 { // an empty file
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("cloud config: not a YAML mapping")
	}
	section := mappingValue(doc.Content[0], fake.SectionName)
	if section.Kind == 0 || section.Tag == "!!null" {
		*section = yaml.Node{Kind: yaml.MappingNode}
	}
	if section.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("cloud config: %q is not a mapping", fake.SectionName)
	}
	*mappingValue(section, "stateFile") = yaml.Node{Kind: yaml.ScalarNode, Value: path}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// mappingValue returns the value node of key in m, added when m has no such key.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	v := &yaml.Node{}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
	return v
}

// StateFileOf returns the fake section's stateFile of a cloud config ("" for none).
func StateFileOf(cloudConfig []byte) (string, error) {
	cfg, err := provider.ReadConfig(bytes.NewReader(cloudConfig), provider.DefaultProviderName)
	if err != nil {
		return "", err
	}
	section, _, err := provider.Section[fake.Config](cfg, fake.SectionName)
	return section.StateFile, err
}

// CCMFlags are the flags StartCCM runs the cloud-controller-manager with, for the
// provider providerName over the cloud config file cloudConfig: every controller
// (cloud-node, cloud-node-lifecycle, service, route), no leader election, no serving port,
// the harness's pod CIDRs and Periods.
func CCMFlags(cp *ControlPlane, providerName, cloudConfig string) []string {
	return []string{
		"--kubeconfig=" + cp.KubeconfigPath,
		"--cloud-provider=" + providerName,
		"--cloud-config=" + cloudConfig,
		"--leader-elect=false",
		"--secure-port=0",
		"--controllers=*",
		"--configure-cloud-routes=true",
		"--cluster-cidr=" + ClusterCIDRs,
		"--node-monitor-period=" + Periods.NodeMonitor.String(),
		"--node-status-update-frequency=" + Periods.NodeStatus.String(),
		"--route-reconciliation-period=" + Periods.Routes.String(),
		"--concurrent-service-syncs=4",
		"--kube-api-qps=100",
		"--kube-api-burst=200",
	}
}

// CCMProcess is a cloud-controller-manager running as its own process: the binary of
// BuildCCM under --cloud-provider=ccmkit, so its cloud is the built-in provider's, made
// from the cloud config file (and its state file), not the harness's Cloud.
type CCMProcess struct {
	// Args are the binary and its flags, as a shell would run them.
	Args []string

	cmd  *exec.Cmd
	done chan struct{}
	err  error // the process's end, once done is closed
	log  *syncWriter
}

// StartCCMProcess writes cloudConfig to cloud.yaml beside the control plane's files and
// starts binary with CCMFlags for the built-in provider (provider.DefaultProviderName)
// and extraFlags, which come last and override them. Its output goes to log (nil:
// discarded).
func StartCCMProcess(binary string, cp *ControlPlane, cloudConfig []byte, log io.Writer, extraFlags ...string) (*CCMProcess, error) {
	path := filepath.Join(cp.Dir(), "cloud.yaml")
	if err := os.WriteFile(path, cloudConfig, 0o600); err != nil {
		return nil, err
	}
	args := append(append([]string{binary}, CCMFlags(cp, provider.DefaultProviderName, path)...), extraFlags...)
	return StartProcess(log, args...)
}

// StartProcess starts args[0] with the arguments args[1:] (any command: a CCM with flags
// of the caller's, the restcloud-server). Its output goes to log (nil: discarded).
func StartProcess(log io.Writer, args ...string) (*CCMProcess, error) {
	if len(args) == 0 {
		return nil, errors.New("no command to start")
	}
	if log == nil {
		log = io.Discard
	}
	p := &CCMProcess{Args: args, done: make(chan struct{}), log: &syncWriter{w: log}}
	p.cmd = exec.Command(args[0], args[1:]...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", args[0], err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// syncWriter serializes the writes of the process's stdout and stderr copiers.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// Pid is the process's ID.
func (p *CCMProcess) Pid() int { return p.cmd.Process.Pid }

// CommandLine is Args as one line for a POSIX shell: an argument with a character the
// shell would read (such as the * of --controllers=*) is single-quoted.
func (p *CCMProcess) CommandLine() string {
	quoted := make([]string, len(p.Args))
	for i, a := range p.Args {
		if strings.ContainsFunc(a, func(r rune) bool { return !strings.ContainsRune(shellSafe, r) }) {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		quoted[i] = a
	}
	return strings.Join(quoted, " ")
}

const shellSafe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./:,+@%"

// Kill ends the process with SIGKILL, as a crash, an OOM kill or a lost node would, and
// waits for it.
func (p *CCMProcess) Kill() error {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-p.done
	return nil
}

// Stop ends the process with SIGTERM, as the kubelet does, and waits up to 30 s for it
// before it kills it. It fails unless the process exited 0: a process that ended before,
// died by the signal or exited with an error did not stop cleanly.
func (p *CCMProcess) Stop() error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-p.done:
		if p.err != nil {
			return fmt.Errorf("process %d did not exit 0 on SIGTERM: %w", p.Pid(), p.err)
		}
		return nil
	case <-time.After(30 * time.Second):
		return errors.Join(errors.New("the cloud-controller-manager did not stop within 30 s of SIGTERM; killed it"), p.Kill())
	}
}

// Exited reports whether the process has ended, and how.
func (p *CCMProcess) Exited() (bool, error) {
	select {
	case <-p.done:
		if p.err == nil {
			return true, fmt.Errorf("the cloud-controller-manager process %d ended (exit status 0)", p.Pid())
		}
		return true, fmt.Errorf("the cloud-controller-manager process %d ended: %w", p.Pid(), p.err)
	default:
		return false, nil
	}
}
