//! One value of a prediction request, as the encoder reads it.
//!
//! Requests carry values as JSON (rows keyed by column, the Open Inference
//! Protocol's tensors) or as the protocol's binary tensors. A [`Cell`] is
//! one such value, borrowed from the request body where it can be, so a
//! batch is encoded without building a JSON tree or a map per row
//! ([`super::Encoder::encode_value`]).

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};

/// One request value.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell<'a> {
    /// JSON `null` (or a non-finite binary float): missing where the column
    /// declares missing tokens, an error elsewhere.
    Null,
    /// A string, matched as it is (after trimming).
    Text(Cow<'a, str>),
    /// A JSON number, matched as its JSON text (`3`, `2.5`) by categorical
    /// columns, read as its value by numeric ones.
    Number(Number),
    /// A JSON boolean, matched as `true` / `false`.
    Bool(bool),
    /// An array or an object: never a value of any column.
    Nested,
}

impl<'a> From<&'a Value> for Cell<'a> {
    fn from(value: &'a Value) -> Cell<'a> {
        match value {
            Value::Null => Cell::Null,
            Value::String(s) => Cell::Text(Cow::Borrowed(s)),
            Value::Number(n) => Cell::Number(n.clone()),
            Value::Bool(b) => Cell::Bool(*b),
            Value::Array(_) | Value::Object(_) => Cell::Nested,
        }
    }
}

impl Cell<'_> {
    /// A binary tensor's float: a JSON number, or null when not finite (JSON
    /// has no NaN).
    pub fn from_f64(x: f64) -> Cell<'static> {
        Number::from_f64(x).map_or(Cell::Null, Cell::Number)
    }
}

/// Deserializes one JSON value into cells pushed onto `out`: a scalar is one
/// cell; an array is flattened into its scalars in row-major order when
/// `flatten` (a tensor's data), else it is one [`Cell::Nested`] like an
/// object (a row's value). Strings are borrowed from the input when they
/// have no escapes.
pub struct CellSeed<'v, 'a> {
    /// Where the cells go.
    pub out: &'v mut Vec<Cell<'a>>,
    /// Flatten arrays (else an array is one nested cell).
    pub flatten: bool,
}

impl<'de: 'a, 'a> DeserializeSeed<'de> for CellSeed<'_, 'a> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for CellSeed<'_, 'a> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number, string, boolean or null")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if self.flatten {
            while seq
                .next_element_seed(CellSeed {
                    out: &mut *self.out,
                    flatten: true,
                })?
                .is_some()
            {}
        } else {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            self.out.push(Cell::Nested);
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // One (invalid) value, refused by the encoder with its row and column.
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        self.out.push(Cell::Nested);
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.out.push(Cell::Null);
        Ok(())
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.visit_unit()
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<(), E> {
        self.out.push(Cell::Bool(b));
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, x: u64) -> Result<(), E> {
        self.out.push(Cell::Number(x.into()));
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, x: i64) -> Result<(), E> {
        self.out.push(Cell::Number(x.into()));
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, x: f64) -> Result<(), E> {
        self.out.push(Cell::from_f64(x));
        Ok(())
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<(), E> {
        self.out.push(Cell::Text(Cow::Borrowed(s)));
        Ok(())
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<(), E> {
        self.out.push(Cell::Text(Cow::Owned(s.to_owned())));
        Ok(())
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<(), E> {
        self.out.push(Cell::Text(Cow::Owned(s)));
        Ok(())
    }
}

/// A JSON object keyed by column name (a prediction request's row), its
/// keys and values borrowed from the input where they can be, in document
/// order (a repeated key: the last one counts, as in a JSON map).
#[derive(Debug, Default)]
pub struct Row<'a> {
    keys: Vec<Cow<'a, str>>,
    values: Vec<Cell<'a>>,
}

impl<'a> Row<'a> {
    /// The (key, value) pairs in document order.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &Cell<'a>)> {
        self.keys.iter().map(AsRef::as_ref).zip(&self.values)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Row<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct RowVisitor<'a>(std::marker::PhantomData<Row<'a>>);
        impl<'de: 'a, 'a> Visitor<'de> for RowVisitor<'a> {
            type Value = Row<'a>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a row: an object keyed by column name")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Row<'a>, A::Error> {
                let mut row = Row::default();
                while let Some(Key(key)) = map.next_key::<Key<'a>>()? {
                    row.keys.push(key);
                    map.next_value_seed(CellSeed {
                        out: &mut row.values,
                        flatten: false,
                    })?;
                }
                Ok(row)
            }
        }
        deserializer.deserialize_map(RowVisitor(std::marker::PhantomData))
    }
}

/// An object key, borrowed when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Key<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor<'a>(std::marker::PhantomData<Key<'a>>);
        impl<'de: 'a, 'a> Visitor<'de> for KeyVisitor<'a> {
            type Value = Key<'a>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a column name")
            }

            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Key<'a>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key<'a>, E> {
                Ok(Key(Cow::Owned(s.to_owned())))
            }

            fn visit_string<E: de::Error>(self, s: String) -> Result<Key<'a>, E> {
                Ok(Key(Cow::Owned(s)))
            }
        }
        deserializer.deserialize_str(KeyVisitor(std::marker::PhantomData))
    }
}
