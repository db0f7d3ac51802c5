package provider

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// credentialsKey is the top-level key of the credentials section.
const credentialsKey = "credentials"

// maxTokenFileSize bounds what is read of a token file: a credential is far smaller, and
// a file that is not one must not make the start read for ever.
const maxTokenFileSize = 64 << 10

// decodeCredentials decodes the credentials section node into out by hand, because
// yaml's own errors quote the values they cannot decode. Its errors say the line, the
// column and what is wrong, and never quote a value, key, tag or anchor of the section.
// copied reports an anchor or alias in the section: the credential may then appear
// elsewhere in the file, where errors about that place would quote it.
func decodeCredentials(node *yaml.Node, out *CredentialsConfig) (errs []error, copied bool) {
	bad := func(n *yaml.Node, format string, args ...any) {
		errs = append(errs, fmt.Errorf("line %d column %d: %s", n.Line, n.Column, fmt.Sprintf(format, args...)))
	}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		switch {
		case n.Kind == yaml.AliasNode:
			bad(n, "credentials: YAML aliases (*name) are not allowed in the credentials")
			copied = true
		case n.Anchor != "":
			bad(n, "credentials: YAML anchors (&name) are not allowed in the credentials: the credential must appear nowhere else in the file")
			copied = true
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(node)
	if copied {
		return errs, true
	}
	if isNull(node) {
		return nil, false
	}
	if node.Kind != yaml.MappingNode {
		bad(node, "credentials must be a mapping with the key token or tokenFile, not %s (the value is not shown: it may be the credential)", kindName(node))
		return errs, false
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(node.Content); i += 2 {
		key, val := node.Content[i], node.Content[i+1]
		name := key.Value
		if key.Kind != yaml.ScalarNode || (name != "token" && name != "tokenFile") {
			hint := ""
			for _, known := range []string{"token", "tokenFile"} {
				if key.Kind == yaml.ScalarNode && strings.EqualFold(strings.TrimSpace(name), known) {
					hint = fmt.Sprintf("; did you mean %q?", known)
				}
			}
			bad(key, "unknown key in credentials (known keys: token, tokenFile; the key is not shown: it may be the credential)%s", hint)
			continue
		}
		if seen[name] {
			bad(key, "credentials.%s is set twice", name)
			continue
		}
		seen[name] = true
		v, err := credentialValue(val)
		if err != nil {
			bad(val, "credentials.%s %s", name, err)
			continue
		}
		switch name {
		case "token":
			out.Token = Secret(v)
		case "tokenFile":
			out.TokenFile, out.tokenFileLine = v, val.Line
		}
	}
	return errs, false
}

// credentialValue returns the text of a credential's scalar node; its errors quote
// nothing of it.
func credentialValue(n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("must be a single value, not %s", kindName(n))
	}
	switch n.Tag {
	case "!!null":
		return "", nil
	case "!!binary":
		data, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(n.Value), ""))
		if err != nil {
			return "", errors.New("is tagged !!binary but is not valid base64")
		}
		return string(data), nil
	}
	return n.Value, nil
}

// isNull reports whether n is YAML's null ("credentials:" with nothing after it).
func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// kindName names the kind of n for errors.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a single value"
	}
	return "an alias"
}

// credentialEnv returns the names of the environment variables for providerName's token.
func credentialEnv(providerName string) (token, file string) {
	p := strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(providerName))
	return p + "_CLOUD_TOKEN", p + "_CLOUD_TOKEN_FILE"
}

// resolveCredentials sets c.Credentials.Token from the one source set: the token inline,
// the token file, or the environment. Its errors name the source, never its value, the
// file's name or the file's content.
func (c *Config) resolveCredentials(providerName string, getenv func(string) string, readFile func(string) ([]byte, error)) error {
	tokenEnv, fileEnv := credentialEnv(providerName)
	var sources []string
	if c.Credentials.Token != "" {
		sources = append(sources, "credentials.token")
	}
	if c.Credentials.TokenFile != "" {
		sources = append(sources, "credentials.tokenFile")
	}
	envToken, envFile := getenv(tokenEnv), getenv(fileEnv)
	if envToken != "" {
		sources = append(sources, "$"+tokenEnv)
	}
	if envFile != "" {
		sources = append(sources, "$"+fileEnv)
	}
	if len(sources) > 1 {
		return fmt.Errorf("credentials: set by %s: set exactly one", strings.Join(sources, " and "))
	}
	path, source, file := c.Credentials.TokenFile, "credentials.tokenFile", "the file it names"
	if c.Credentials.tokenFileLine > 0 {
		file = fmt.Sprintf("the file named on line %d", c.Credentials.tokenFileLine)
	}
	switch {
	case envToken != "":
		c.Credentials.Token = Secret(envToken)
		return nil
	case envFile != "":
		path, source, file = envFile, "$"+fileEnv, "the file it names"
	}
	if path == "" {
		return nil
	}
	data, err := readFile(path)
	switch {
	case err != nil:
		return fmt.Errorf("%s: cannot read %s: %w", source, file, withoutPath(err))
	case len(data) > maxTokenFileSize:
		return fmt.Errorf("%s: %s is larger than %d KiB: it must hold the token alone", source, file, maxTokenFileSize>>10)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return fmt.Errorf("%s: %s is empty", source, file)
	}
	c.Credentials.Token = Secret(token)
	c.Credentials.fromFile = path == c.Credentials.TokenFile
	return nil
}

// readTokenFile reads a token file: a regular file (a mounted Secret is one, through its
// symlinks), of which it reads at most maxTokenFileSize+1 bytes.
func readTokenFile(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: errNotRegular}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return io.ReadAll(io.LimitReader(f, maxTokenFileSize+1))
}

var errNotRegular = errors.New("not a regular file")

// withoutPath returns a file error without the file's name, which may be a credential
// typed into the wrong place; errors.Is still matches its cause (fs.ErrNotExist, ...).
func withoutPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pathlessError{msg: pe.Err.Error(), err: pe.Err}
	}
	return pathlessError{msg: "the read failed (details withheld: they may quote the name)", err: err}
}

// pathlessError is an error with the message msg that matches err.
type pathlessError struct {
	msg string
	err error
}

func (e pathlessError) Error() string { return e.msg }
func (e pathlessError) Unwrap() error { return e.err }
