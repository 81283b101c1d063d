package cluster

import "errors"

// EntityConfig reads /config/<entityType>/<name> (users, clients...):
// empty when the znode is absent.
func (a *Admin) EntityConfig(entityType, name string) (map[string]string, error) {
	p := ConfigEntityPath(entityType, name)
	data, _, err := a.zk.Get(p)
	if errors.Is(err, ErrNoNode) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return DecodeEntityConfig(p, data)
}

// ChangeEntityConfig rewrites /config/<entityType>/<name> with configs
// (Kafka's AdminZkClient.changeConfigs for users and clients: the whole map
// is written, set or created, retrying a write that raced another), then
// creates a config_change_ notification naming <entityType>/<name>.
func (a *Admin) ChangeEntityConfig(entityType, name string, configs map[string]string) error {
	if configs == nil {
		configs = map[string]string{}
	}
	for attempt := 0; ; attempt++ {
		op, err := a.setOrCreateOp(ConfigEntityPath(entityType, name), EncodeEntityConfig(configs))
		if err != nil {
			return err
		}
		if op.Kind == OpSet {
			_, err = a.zk.Set(op.Path, op.Data, op.Version)
		} else {
			_, err = a.zk.Create(op.Path, op.Data, Persistent)
		}
		if (errors.Is(err, ErrBadVersion) || errors.Is(err, ErrNodeExists) || errors.Is(err, ErrNoNode)) && attempt < 5 {
			continue
		}
		if err != nil {
			return err
		}
		break
	}
	_, err := a.zk.Create(ConfigChangeCreatePath(), EncodeConfigChange(entityType+"/"+name), PersistentSequential)
	return err
}
