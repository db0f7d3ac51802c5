package builtin

import (
	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/provider"
)

// Blank-importing this package registers the built-in provider, provider.DefaultProviderName,
// served by the in-memory fake cloud.
func init() {
	provider.Register(provider.DefaultProviderName, Backend(), provider.Options{})
}

// Backend is the backend of the built-in provider: the in-memory cloud of package fake,
// named fake.SectionName and described by the config's section of that name (see
// fake.Config; an empty section is an empty cloud). Its region defaults to the config's
// region.
//
// It builds the cloud with fake.Open: when the section names a stateFile, the cloud is
// loaded from it (or, where no file exists yet, created there), so a bad or foreign file
// fails the start with an error naming it; every write is saved to it before it succeeds.
// That is the fake's own storage, not a call of a cloud API: a standby replica that opens
// the file before it leads reads the file again at its first call after it does.
func Backend() provider.Backend[fake.Config] {
	return provider.Backend[fake.Config]{
		Name: fake.SectionName,
		New: func(cfg *provider.Config, section fake.Config) (cloudapi.Client, error) {
			if section.Region == "" {
				section.Region = cfg.Region
			}
			return fake.Open(section)
		},
	}
}
