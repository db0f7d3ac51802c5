package provider

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/internal/strictyaml"
)

// EnvFallback is an environment variable that an adapter reads as the fallback of one key
// of the cloud config: the variables its cloud's earlier cloud-controller-manager read,
// so that a cluster moving over keeps its configuration where its users have it (a
// Deployment's env, a Secret's key). The cloud config wins: a key the file sets is not
// read from the environment. A variable set to the empty string counts as unset.
type EnvFallback struct {
	// Name is the variable, such as HCLOUD_NETWORK: upper-case letters, digits and '_'.
	Name string
	// Key is the cloud config key the variable's value stands for, dotted from the top
	// level: "hcloud.network" (the backend's section), "loadBalancer.settings.type",
	// "enable.loadBalancers", "credentials.token". A credentials key is read only when
	// no credential is set otherwise (the file's credentials section,
	// <PROVIDER>_CLOUD_TOKEN or <PROVIDER>_CLOUD_TOKEN_FILE). Empty: ccmkit has no
	// counterpart; the variable is never read, and one that is set is logged at start,
	// with Doc.
	Key string
	// Bool says that the value is a boolean as strconv.ParseBool reads it (1, t, true,
	// TRUE, 0, f, false, ...), as the earlier cloud-controller-manager read its switches;
	// any other value is an error naming the variable. Otherwise the value is the key's
	// text, checked as the file's would be.
	Bool bool
	// Doc says what the variable sets, and for one without a Key why ccmkit has none.
	// The adapter's configuration reference lists it.
	Doc string
}

var envNameRE = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)

// validateEnv checks an adapter's declared fallbacks: each with a name of its own and a
// Doc, and a Key (when set) under a top-level key of the config or the backend's section.
func validateEnv(fallbacks []EnvFallback, backend string) error {
	top := append(strictyaml.Keys[Config](), credentialsKey, backend)
	var errs []error
	seen := map[string]bool{}
	for i, f := range fallbacks {
		switch {
		case !envNameRE.MatchString(f.Name):
			errs = append(errs, fmt.Errorf("environment fallback %d: name %q is not an environment variable's (A-Z, 0-9 and _)", i, f.Name))
		case seen[f.Name]:
			errs = append(errs, fmt.Errorf("environment fallback %s is declared twice", f.Name))
		case strings.TrimSpace(f.Doc) == "":
			errs = append(errs, fmt.Errorf("environment fallback %s has no Doc", f.Name))
		}
		seen[f.Name] = true
		if f.Key == "" {
			continue
		}
		path := strings.Split(f.Key, ".")
		if slices.Contains(path, "") || !slices.Contains(top, path[0]) || len(path) < 2 && path[0] != backend {
			errs = append(errs, fmt.Errorf("environment fallback %s: key %q is no key of the cloud config (it begins with one of %s)", f.Name, f.Key, strings.Join(top, ", ")))
		}
	}
	return errors.Join(errs...)
}

// applyEnv sets the keys of fallbacks that the config root (a mapping, or nil for an empty
// file) does not set to the values of their variables (lookup), and returns the root and
// the variables it read, as "key from $NAME". A boolean that does not parse is an error
// naming the variable; a variable whose key the file sets, or without a key, is logged.
// skipCredentials leaves the credentials keys alone (a credential is set otherwise).
func applyEnv(root *yaml.Node, fallbacks []EnvFallback, lookup func(string) (string, bool), skipCredentials bool) (*yaml.Node, []string, error) {
	logger := klog.Background()
	if root == nil {
		root = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	var used []string
	var errs []error
	for _, f := range fallbacks {
		v, ok := lookup(f.Name)
		if !ok || v == "" {
			continue
		}
		path := strings.Split(f.Key, ".")
		switch {
		case f.Key == "":
			logger.Info("An environment variable of the cloud's earlier cloud-controller-manager has no counterpart here: not read", "variable", f.Name, "why", f.Doc)
			continue
		case path[0] == credentialsKey && skipCredentials:
			logger.Info("An environment variable is not read: a credential is set otherwise", "variable", f.Name, "key", f.Key)
			continue
		}
		val := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}
		if f.Bool {
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				errs = append(errs, fmt.Errorf("$%s (for %s): %q is not a boolean (true or false, 1 or 0)", f.Name, f.Key, v))
				continue
			}
			val.Tag, val.Value = "!!bool", strconv.FormatBool(b)
		}
		if !setAbsent(root, path, val) {
			logger.Info("An environment variable is not read: the cloud config sets its key", "variable", f.Name, "key", f.Key)
			continue
		}
		logger.Info("Reading a cloud config key from the environment", "variable", f.Name, "key", f.Key)
		used = append(used, f.Key+" from $"+f.Name)
	}
	return root, used, errors.Join(errs...)
}

// setAbsent sets the key path of the mapping n to val unless n sets it (a null value
// counts as unset), making the mappings on the way; it reports whether it set it. A key
// on the way whose value is no mapping is left for the decoder to report.
func setAbsent(n *yaml.Node, path []string, val *yaml.Node) bool {
	if n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Kind != yaml.ScalarNode || n.Content[i].Value != path[0] {
			continue
		}
		child := n.Content[i+1]
		if isNull(child) {
			child = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			n.Content[i+1] = child
			if len(path) == 1 {
				n.Content[i+1] = val
				return true
			}
		}
		return len(path) > 1 && setAbsent(child, path[1:], val)
	}
	key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: path[0]}
	if len(path) == 1 {
		n.Content = append(n.Content, key, val)
		return true
	}
	child := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	n.Content = append(n.Content, key, child)
	return setAbsent(child, path[1:], val)
}
