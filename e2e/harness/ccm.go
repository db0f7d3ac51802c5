package harness

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	"k8s.io/cloud-provider/options"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/configz"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/ccmkit/ccmkit/controllers"
)

// ClusterCIDRs are the pod CIDRs of the harness's cluster (--cluster-cidr): the route
// controller manages routes for Node pod CIDRs inside them.
const ClusterCIDRs = "10.244.0.0/16,fd00:10:244::/56"

// Periods are the controller periods the harness runs the CCM with: the upstream
// defaults shortened so that scenarios take seconds, not minutes.
var Periods = struct {
	NodeMonitor, NodeStatus, Routes time.Duration
}{NodeMonitor: time.Second, NodeStatus: 5 * time.Second, Routes: 2 * time.Second}

// CCM is a cloud-controller-manager running in this process: the command of
// k8s.io/cloud-provider/app, built exactly as examples/ccm builds it, with the provider
// registered by Use.
type CCM struct {
	stop chan struct{}
	done chan error
	once sync.Once
	// exits is exitCalls when the CCM started: a later call is this CCM's (one runs at a time).
	exits int64
}

var (
	logging sync.Once
	logOut  switchWriter
	// exitCalls counts the calls of klog.OsExit in this process, and exitCode is the last
	// one's code (see exitGoroutine).
	exitCalls, exitCode atomic.Int64
)

// exitGoroutine is klog.OsExit in this process. The upstream command ends the process when
// it stops leading (with --leader-elect, also when it is stopped as asked) and on
// klog.Fatal: in a test binary that would end every test. Here the calling goroutine ends
// instead (runtime.Goexit runs its deferred calls, so the command's goroutine still
// reports), and the call is counted: a CCM that calls it while running reports it as its
// exit, a CCM being stopped does not (losing the lease is how it stops).
func exitGoroutine(code int) {
	exitCode.Store(int64(code))
	exitCalls.Add(1)
	runtime.Goexit()
}

// LogVerbosity is the verbosity of the CCM's log (klog -v).
const LogVerbosity = 2

// setUpLogging applies the logging configuration once for the process, then points the
// global logger at logOut. The CCM command applies the same configuration again on every
// start; with ReapplyHandlingIgnoreUnchanged that is a no-op, instead of an error or a
// data race with goroutines that are logging, and the logger set here stays.
func setUpLogging() error {
	var err error
	logging.Do(func() {
		klog.OsExit = exitGoroutine
		logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
		if err = logsapi.ValidateAndApply(logs.NewOptions(), utilfeature.DefaultFeatureGate); err != nil {
			return
		}
		klog.SetLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&logOut), textlogger.Verbosity(LogVerbosity))))
	})
	return err
}

// switchWriter is the process's log destination: the log of the CCM running now.
type switchWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *switchWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		return len(p), nil
	}
	return s.w.Write(p)
}

func (s *switchWriter) set(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w = w
}

// StartCCM writes the cloud's config beside the control plane's files and starts the
// cloud-controller-manager with every controller (cloud-node, cloud-node-lifecycle,
// service, route, and the load balancer class controller, which starts only when the cloud
// config names loadBalancer.class, and the sweeper, which starts only when it says
// sweeper.enabled: true), no leader election and no serving port. Its log goes to logFile (nil:
// discarded). extraFlags come last and override the defaults.
func StartCCM(cp *ControlPlane, cloud *Cloud, logFile io.Writer, extraFlags ...string) (*CCM, error) {
	cloudConfig := filepath.Join(cp.Dir(), "cloud.yaml")
	if err := os.WriteFile(cloudConfig, cloud.Config, 0o600); err != nil {
		return nil, err
	}
	flags := CCMFlags(cp, ProviderName, cloudConfig)
	return RunCCM(cloud, logFile, append(flags, extraFlags...))
}

// RunCCM starts the cloud-controller-manager command with exactly flags (nothing added: the
// caller names the kubeconfig, --cloud-provider=ProviderName, the cloud config file and
// the rest) over cloud. Its log goes to logFile (nil: discarded).
func RunCCM(cloud *Cloud, logFile io.Writer, flags []string) (*CCM, error) {
	if err := setUpLogging(); err != nil {
		return nil, fmt.Errorf("setting up logging: %w", err)
	}
	if logFile == nil {
		logFile = io.Discard
	}
	logOut.set(logFile)
	Use(cloud)

	opts, err := options.NewCloudControllerManagerOptions()
	if err != nil {
		return nil, err
	}
	c := &CCM{stop: make(chan struct{}), done: make(chan error, 1), exits: exitCalls.Load()}
	cmd := app.NewCloudControllerManagerCommand(opts, initCloud, controllers.With(app.DefaultInitFuncConstructors),
		names.CCMControllerAliases(), cliflag.NamedFlagSets{}, c.stop)
	cmd.SetArgs(flags)
	cmd.SetOut(logFile)
	cmd.SetErr(logFile)
	cmd.SilenceUsage = true
	go func() {
		var err error
		returned := false
		defer func() {
			// A panic of initCloud (or of the command) is the CCM's failure, not the
			// process's: the test sees it as an error and its cleanups still run.
			if r := recover(); r != nil {
				err = fmt.Errorf("the cloud-controller-manager panicked: %v", r)
			} else if !returned && !c.stopping() {
				err = fmt.Errorf("the cloud-controller-manager exited with code %d", exitCode.Load())
			}
			// The next start in this process registers /configz again.
			configz.Delete(app.ConfigzName)
			c.done <- err
		}()
		err = cmd.Execute()
		returned = true
	}()
	return c, nil
}

// stopping reports whether Stop was called.
func (c *CCM) stopping() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

// initCloud is examples/ccm's: it builds the provider named by --cloud-provider from
// --cloud-config. Where examples/ccm exits the process, it panics with the reason, which
// StartCCM's goroutine turns into the CCM's error. (The upstream command's own exits end
// only their goroutine: see exitGoroutine.)
func initCloud(cfg *config.CompletedConfig) cloudprovider.Interface {
	shared := cfg.ComponentConfig.KubeCloudShared
	cloud, err := cloudprovider.InitCloudProvider(shared.CloudProvider.Name, shared.CloudProvider.CloudConfigFile)
	if err != nil {
		panic(fmt.Sprintf("cloud provider could not be initialized: %v", err))
	}
	if cloud == nil {
		panic("no cloud provider " + shared.CloudProvider.Name)
	}
	return cloud
}

// Stop stops the CCM and waits up to a minute for its command to return. Its
// controllers stop with it.
func (c *CCM) Stop() error {
	c.once.Do(func() { close(c.stop) })
	select {
	case err := <-c.done:
		c.done <- err
		return err
	case <-time.After(time.Minute):
		return errors.New("the cloud-controller-manager did not stop within a minute")
	}
}

// Exited reports whether the CCM's command has returned and with what error; a CCM that
// exits before it is stopped failed to start.
func (c *CCM) Exited() (bool, error) {
	select {
	case err := <-c.done:
		c.done <- err
		return true, err
	default:
	}
	if exitCalls.Load() != c.exits && !c.stopping() {
		// A goroutine of the CCM other than the command's called klog.Fatal.
		return true, fmt.Errorf("the cloud-controller-manager exited with code %d", exitCode.Load())
	}
	return false, nil
}
