//! A JSON reader that refuses what two readers could read two ways.
//!
//! `serde_json::Value` keeps the last of two equal keys; another reader
//! (a language's JSON library, `jq`) may keep the first. A line or record
//! that says two things is refused, not read one way.

/// Any JSON value in which no object names a key twice (deserializing it
/// is the check).
pub struct UniqueKeys;

impl<'de> serde::Deserialize<'de> for UniqueKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(UniqueKeys)
    }
}

impl<'de> serde::de::Visitor<'de> for UniqueKeys {
    type Value = UniqueKeys;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> std::result::Result<Self, E> {
        Ok(self)
    }

    fn visit_i64<E>(self, _: i64) -> std::result::Result<Self, E> {
        Ok(self)
    }

    fn visit_u64<E>(self, _: u64) -> std::result::Result<Self, E> {
        Ok(self)
    }

    fn visit_f64<E>(self, _: f64) -> std::result::Result<Self, E> {
        Ok(self)
    }

    fn visit_str<E>(self, _: &str) -> std::result::Result<Self, E> {
        Ok(self)
    }

    fn visit_unit<E>(self) -> std::result::Result<Self, E> {
        Ok(self)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut items: A,
    ) -> std::result::Result<Self, A::Error> {
        while items.next_element::<UniqueKeys>()?.is_some() {}
        Ok(self)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self, A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            map.next_value::<UniqueKeys>()?;
            if let Some(again) = seen.replace(key) {
                return Err(serde::de::Error::custom(format!(
                    "the key `{again}` appears twice in one object"
                )));
            }
        }
        Ok(self)
    }
}
