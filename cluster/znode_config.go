package cluster

import "strings"

// EncodeEntityConfig is /config/<type>/<name> (e.g. /config/topics/T): the
// entity's overrides, values as strings, keys sorted.
//
//	{"version":1,"config":{"retention.ms":"86400000"}}
func EncodeEntityConfig(config map[string]string) []byte {
	w := &jsonWriter{b: make([]byte, 0, 32+32*len(config))}
	w.open('{')
	w.int("version", 1)
	w.openObject("config")
	for _, k := range sortedKeys(config) {
		w.string(k, config[k])
	}
	w.close('}')
	w.close('}')
	return w.b
}

// DecodeEntityConfig decodes the config znode at path. Empty data or no
// "config" key is no overrides (Kafka's reading); a non-string value is an
// error.
func DecodeEntityConfig(path string, data []byte) (map[string]string, error) {
	cfg := map[string]string{}
	if len(data) == 0 {
		return cfg, nil
	}
	o := parseObj(path, data)
	c, ok := o.obj("config", false)
	if ok {
		for _, k := range c.keys() {
			v, _ := c.str(k, true)
			cfg[k] = v
		}
		o.merge(c)
	}
	if o.err != nil {
		return nil, o.err
	}
	return cfg, nil
}

// ConfigChange is a /config/changes/config_change_N notification: which
// entity's config changed.
//
//	{"version":2,"entity_path":"topics/T"}
//
// Version 1 (before Kafka 1.1) named the entity with entity_type and
// entity_name instead; both decode.
type ConfigChange struct {
	EntityType string // topics, brokers, clients, users, ips
	EntityName string // may contain '/' for nested entities (users/U/clients/C)
}

// EntityPath is the entity's path below /config ("topics/T").
func (c ConfigChange) EntityPath() string { return c.EntityType + "/" + c.EntityName }

// EncodeConfigChange returns a version 2 notification for the entity at
// entityPath below /config ("topics/T").
func EncodeConfigChange(entityPath string) []byte {
	w := &jsonWriter{b: make([]byte, 0, 48)}
	w.open('{')
	w.int("version", 2)
	w.string("entity_path", entityPath)
	w.close('}')
	return w.b
}

// DecodeConfigChange decodes the notification at path.
func DecodeConfigChange(path string, data []byte) (ConfigChange, error) {
	o := parseObj(path, data)
	v, _ := o.int32("version", true)
	var c ConfigChange
	switch {
	case o.err != nil:
	case v == 1:
		c.EntityType, _ = o.str("entity_type", true)
		c.EntityName, _ = o.str("entity_name", true)
	case v == 2:
		p, _ := o.str("entity_path", true)
		var ok bool
		c.EntityType, c.EntityName, ok = strings.Cut(p, "/")
		if o.err == nil && (!ok || c.EntityType == "" || c.EntityName == "") {
			o.fail("entity_path %q: want <type>/<name>", p)
		}
	default:
		o.fail("unsupported version %d", v)
	}
	if o.err != nil {
		return ConfigChange{}, o.err
	}
	return c, nil
}
