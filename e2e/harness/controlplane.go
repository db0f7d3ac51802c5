package harness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ControlPlaneDirEnv names the environment variable that points at the folder holding the
// kube-apiserver and etcd binaries. Without it the harness looks for
// .cache/controlplane in the repository (where `make controlplane` builds them).
const ControlPlaneDirEnv = "CCMKIT_CONTROLPLANE_DIR"

// ControlPlane is a kube-apiserver and an etcd running as processes on 127.0.0.1, with
// an admin identity the test (or demo) and the cloud-controller-manager use.
type ControlPlane struct {
	// Config reaches the kube-apiserver as a member of system:masters.
	Config *rest.Config
	// Client is a clientset over Config.
	Client kubernetes.Interface
	// KubeconfigPath is a kubeconfig file with the same identity; it is removed by Stop.
	KubeconfigPath string

	// AuditLogPath is the kube-apiserver's audit log (JSON lines of audit.k8s.io/v1 Events)
	// when the control plane was started with ControlPlaneOptions.AuditServiceAccounts;
	// empty otherwise.
	AuditLogPath string

	env *envtest.Environment
	dir string
}

// ControlPlaneOptions change how StartControlPlaneWith starts the control plane.
type ControlPlaneOptions struct {
	// AuditServiceAccounts writes every request made by a ServiceAccount (any member of
	// system:serviceaccounts) to AuditLogPath, at level Metadata: who did what to which
	// object, and the answer's status code. Requests of other users are not logged.
	AuditServiceAccounts bool
}

// auditPolicy logs the requests of ServiceAccounts at level Metadata, once each (when the
// answer is complete), and nothing else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    userGroups: ["system:serviceaccounts"]
  - level: None
`

// BinaryDir returns the folder with the control-plane binaries: $CCMKIT_CONTROLPLANE_DIR,
// or the nearest .cache/controlplane above the working directory that has both. The
// error says how to build them.
func BinaryDir() (string, error) {
	if dir := os.Getenv(ControlPlaneDirEnv); dir != "" {
		return dir, checkBinaries(dir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		candidate := filepath.Join(d, ".cache", "controlplane")
		if checkBinaries(candidate) == nil {
			return candidate, nil
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	return "", fmt.Errorf("no kube-apiserver and etcd binaries in .cache/controlplane above %s: run `make controlplane` in the repository root (the first build takes about 10 minutes on 2 cores), or set %s", wd, ControlPlaneDirEnv)
}

func checkBinaries(dir string) error {
	var errs []error
	for _, name := range []string{"kube-apiserver", "etcd"} {
		info, err := os.Stat(filepath.Join(dir, name))
		switch {
		case err != nil:
			errs = append(errs, err)
		case info.Mode()&0o111 == 0:
			errs = append(errs, fmt.Errorf("%s is not executable", filepath.Join(dir, name)))
		}
	}
	return errors.Join(errs...)
}

// StartControlPlane starts etcd and kube-apiserver from BinaryDir with what the
// cloud-controller-manager's scenarios need (dual-stack Service CIDRs, no endpoint
// reconciler; envtest runs etcd without fsync) and waits until the API answers. Stop it with Stop,
// also when a later step fails: it owns two processes and a temporary folder.
func StartControlPlane() (*ControlPlane, error) {
	return StartControlPlaneWith(ControlPlaneOptions{})
}

// StartControlPlaneWith is StartControlPlane with options.
func StartControlPlaneWith(opts ControlPlaneOptions) (*ControlPlane, error) {
	bin, err := BinaryDir()
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{}
	if cp.dir, err = os.MkdirTemp("", "ccmkit-e2e-"); err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    bin,
		ControlPlaneStartTimeout: time.Minute,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	api := env.ControlPlane.GetAPIServer()
	api.Configure().
		Set("service-cluster-ip-range", "10.96.0.0/16,fd00:10:96::/112").
		Set("endpoint-reconciler-type", "none")
	if opts.AuditServiceAccounts {
		policy := filepath.Join(cp.dir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
			_ = os.RemoveAll(cp.dir)
			return nil, err
		}
		cp.AuditLogPath = filepath.Join(cp.dir, "audit.log")
		api.Configure().
			Set("audit-policy-file", policy).
			Set("audit-log-path", cp.AuditLogPath).
			Set("audit-log-format", "json")
	}

	cp.env = env
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		_ = os.RemoveAll(cp.dir)
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", bin, err)
	}
	if err := cp.finish(cfg); err != nil {
		_ = cp.Stop()
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) finish(cfg *rest.Config) error {
	user, err := cp.env.AddUser(envtest.User{Name: "ccmkit-admin", Groups: []string{"system:masters"}}, cfg)
	if err != nil {
		return fmt.Errorf("adding an admin identity: %w", err)
	}
	cp.Config = user.Config()
	cp.Config.QPS, cp.Config.Burst = 200, 400
	if cp.Client, err = kubernetes.NewForConfig(cp.Config); err != nil {
		return err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	cp.KubeconfigPath = filepath.Join(cp.dir, "kubeconfig")
	return os.WriteFile(cp.KubeconfigPath, kubeconfig, 0o600)
}

// Dir is a temporary folder that lives as long as the control plane, for files such as
// the cloud config and logs.
func (cp *ControlPlane) Dir() string { return cp.dir }

// Stop stops kube-apiserver and etcd and removes every file they and the harness wrote.
func (cp *ControlPlane) Stop() error {
	err := cp.env.Stop()
	if cp.dir != "" {
		err = errors.Join(err, os.RemoveAll(cp.dir))
	}
	return err
}
