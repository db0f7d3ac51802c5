package cloudapi

import (
	"maps"
	"strings"
)

// TagSettingPrefix is the prefix of the tags that record the settings a load balancer was
// asked for (LoadBalancerSpec.SettingValues), on a cloud that reports a value of every setting
// for every load balancer (a type, an algorithm, a location) where the contract reports
// only the settings asked for: TagSettingPrefix+name, the value asked for.
const TagSettingPrefix = "settings.ccmkit.io/"

// TagsWithSettingValues returns spec's tags with a tag TagSettingPrefix+name per setting of
// spec, to write as the load balancer's tags. spec is not changed.
func TagsWithSettingValues(spec LoadBalancerSpec) map[string]string {
	tags := maps.Clone(spec.Tags)
	for name, v := range spec.SettingValues {
		if tags == nil {
			tags = make(map[string]string, len(spec.SettingValues))
		}
		tags[TagSettingPrefix+name] = v
	}
	return tags
}

// SettingValuesFromTags splits the tags that a load balancer written with TagsWithSettingValues
// carries: the tags without the setting tags, and the settings that were asked for (a
// setting tag), each with its value in actual, the cloud's (which may differ from the one
// asked for until a write makes it so). A setting tag whose name actual lacks is dropped;
// settings is nil when none was asked for. tags is not changed.
func SettingValuesFromTags(tags, actual map[string]string) (rest, settings map[string]string) {
	rest = maps.Clone(tags)
	for k := range tags {
		if name, ok := strings.CutPrefix(k, TagSettingPrefix); ok {
			if v, known := actual[name]; known {
				if settings == nil {
					settings = map[string]string{}
				}
				settings[name] = v
			}
			delete(rest, k)
		}
	}
	return rest, settings
}
