package provider

import (
	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
)

// FakeBackendName is the backend of the built-in provider: the value of the config's
// "backend" key and the top-level key of the fake cloud's section.
const FakeBackendName = "fake"

// Blank-importing this package registers the built-in provider, DefaultProviderName,
// served by the in-memory fake cloud.
func init() {
	Register(DefaultProviderName, FakeBackend(), Options{})
}

// FakeBackend is the backend of the built-in provider: the in-memory cloud of package fake,
// described by the config's `fake:` section (see fake.Config; an empty section is an empty
// cloud). Its region defaults to the config's region. Tests build a provider on it
// without the global registry with Factory(FakeBackend(), opts).
func FakeBackend() Backend[fake.Config] {
	return Backend[fake.Config]{
		Name: FakeBackendName,
		New: func(cfg *Config, section fake.Config) (cloudapi.Client, error) {
			if section.Region == "" {
				section.Region = cfg.Region
			}
			return fake.New(section)
		},
	}
}
