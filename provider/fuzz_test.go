package provider

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/ccmkit/ccmkit/fake"
)

// fuzzMarker is the credential of FuzzReadConfig's inputs. yaml quotes at most the first
// seven characters of a value it cannot decode, so a leak is any four characters of it.
const fuzzMarker = "qzXJ7wKv"

// fuzzTokenPath is the one token file FuzzReadConfig's file system has; it holds
// fuzzMarker.
const fuzzTokenPath = "/token"

// markerParts returns fuzzMarker's substrings of four characters.
func markerParts() []string {
	var parts []string
	for i := 0; i+4 <= len(fuzzMarker); i++ {
		parts = append(parts, fuzzMarker[i:i+4])
	}
	return parts
}

// containsMarker reports whether s contains any part of fuzzMarker.
func containsMarker(s string) bool {
	for _, p := range markerParts() {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// markerOutsideCredentials reports whether data holds any part of fuzzMarker in YAML
// outside the top-level credentials section: in a value, key, tag or anchor that errors
// about other keys may rightly quote. It does not follow aliases (an alias's own name
// counts); when data is no YAML, nothing is outside.
func markerOutsideCredentials(data []byte) bool {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return false
	}
	var outside func(n *yaml.Node) bool
	outside = func(n *yaml.Node) bool {
		if containsMarker(n.Value) || containsMarker(n.Tag) || containsMarker(n.Anchor) {
			return true
		}
		for _, c := range n.Content {
			if outside(c) {
				return true
			}
		}
		return false
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return outside(root)
	}
	if containsMarker(root.Tag) || containsMarker(root.Anchor) {
		return true
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i], root.Content[i+1]
		if key.Kind == yaml.ScalarNode && key.Value == credentialsKey {
			continue
		}
		if outside(key) || outside(val) {
			return true
		}
	}
	return false
}

// fuzzEnv is the environment of one FuzzReadConfig input, by envMode: nothing, the
// marker as the token, the marker as the token file's name, or the token file.
func fuzzEnv(envMode uint8) func(string) string {
	return func(name string) string {
		switch {
		case envMode%4 == 1 && name == "CCMKIT_CLOUD_TOKEN":
			return fuzzMarker
		case envMode%4 == 2 && name == "CCMKIT_CLOUD_TOKEN_FILE":
			return fuzzMarker
		case envMode%4 == 3 && name == "CCMKIT_CLOUD_TOKEN_FILE":
			return fuzzTokenPath
		}
		return ""
	}
}

// fuzzReadFile is FuzzReadConfig's file system: fuzzTokenPath holds the marker, and
// every other name is missing, with the name in the error, as os.ReadFile says it.
func fuzzReadFile(name string) ([]byte, error) {
	if name == fuzzTokenPath {
		return []byte(" " + fuzzMarker + "\n"), nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// fuzzSeeds returns the hostile shapes of TestSecretNeverPrints and the cloud configs of
// the repository (the docs', the demos', e2e's, deploy's), with fuzzMarker as the
// credential.
func fuzzSeeds(f *testing.F) []string {
	seeds := []string{
		"",
		"{}",
		"cluster: {id: a}\n",
		"cluster: {id: a}\ncredentials: {token: M}\n",
		"cluster: {id: a}\ncredentials:\n  token: 'M'\n",
		"cluster: {id: a}\ncredentials: {tokenFile: /token}\n",
		"cluster: {id: a}\ncredentials: {tokenFile: M}\n",
		"cluster: {id: a}\ncredentials: M\n",
		"cluster: {id: a}\ncredentials: |\n  M\n",
		"cluster: {id: a}\ncredentials: [M]\n",
		"cluster: {id: a}\ncredentials: {token: [M]}\n",
		"cluster: {id: a}\ncredentials: {token: {M: x}}\n",
		"cluster: {id: a}\ncredentials: {M}\n",
		"cluster: {id: a}\ncredentials: {tokenfile: M}\n",
		"cluster: {id: a}\ncredentials: {token: a, token: M}\n",
		"cluster: {id: a}\ncredentials: {token: M}\ncredentials: {token: M}\n",
		"cluster: {id: a}\ncredentials: {token: &t M}\ncloudAPI: {burst: *t}\n",
		"cluster: {id: a}\ncredentials: &c {token: M}\nnodes: {additionalLabels: *c}\n",
		"cluster: {id: a}\ncredentials: {token: &M x}\n",
		"cluster: {id: a}\ncredentials: {token: *M}\n",
		"&all\ncluster: {id: a}\ncredentials: {token: M}\nnodes: {additionalLabels: *all}\n",
		"cluster: {id: a}\ncredentials: {token: !M value}\n",
		"cluster: {id: a}\ncredentials: !M {token: x}\n",
		"cluster: {id: a}\ncredentials: {token: !!binary M}\n",
		"cluster: {id: a}\ncredentials: {token: !!int M}\n",
		"cluster: {id: a}\ncredentials: {token: M, tokenFile: M}\n",
		"cluster: {id: a}\ncredentials: [M]\ncloudAPI: {burst: lots}\n",
		"cluster: {id: a}\ncloudAPI: {qps: .nan, burst: 99999999999999999999}\n",
		"cluster: {id: a}\ncloudAPI: {qps: 1e-400, unlimited: true, maxRetryAfter: -1s}\n",
		"cluster: {id: a}\nfake: {instances: [{id: i-1, name: n}]}\ncredentials: {token: M}\n",
	}
	for i := range seeds {
		seeds[i] = strings.ReplaceAll(seeds[i], "M", fuzzMarker)
	}
	withToken := "credentials: {token: " + fuzzMarker + "}\n"
	for _, path := range []string{"../examples/demo/cloud.yaml", "../e2e/demo/cloud.yaml", "../e2e/testdata/cloud.yaml"} {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, string(data), string(data)+withToken)
	}
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil {
		f.Fatal(err)
	}
	for _, path := range append([]string{"../README.md"}, docs...) {
		doc, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
			seeds = append(seeds, m[1], m[1]+withToken)
		}
	}
	secret, err := os.ReadFile("../deploy/base/secret.yaml")
	if err != nil {
		f.Fatal(err)
	}
	var manifest struct {
		StringData map[string]string `yaml:"stringData"`
	}
	if err := yaml.Unmarshal(secret, &manifest); err != nil {
		f.Fatal(err)
	}
	seeds = append(seeds, manifest.StringData["cloud.yaml"])
	return seeds
}

// FuzzReadConfig feeds arbitrary bytes to ReadConfig, Validate and the fake backend's
// section decoder, with an environment that may hold the credential too. None may panic,
// and when the credential (fuzzMarker) is only in the credentials section or the
// environment, no error and no printed Config shows any part of it.
func FuzzReadConfig(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		for env := range uint8(4) {
			f.Add([]byte(seed), env)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, envMode uint8) {
		var texts []string
		cfg, err := readConfig(strings.NewReader(string(data)), DefaultProviderName, fuzzEnv(envMode), fuzzReadFile)
		if err != nil {
			texts = append(texts, err.Error(), fmt.Sprintf("%+v", err))
		} else {
			cfg.Backend = fake.SectionName
			if err := cfg.Validate(); err != nil {
				texts = append(texts, err.Error())
			}
			if _, _, err := Section[fake.Config](cfg, fake.SectionName); err != nil {
				texts = append(texts, err.Error())
			}
			texts = append(texts, fmt.Sprintf("%+v", *cfg), fmt.Sprintf("%#v", *cfg))
		}
		if markerOutsideCredentials(data) {
			return // other keys' errors may quote it
		}
		for _, text := range texts {
			if containsMarker(text) {
				t.Fatalf("the credential shows:\n%s\ninput (env mode %d):\n%s", text, envMode%4, data)
			}
		}
	})
}
