//! Is every number of a model finite? One check for every learner's model
//! before it is stored (`Model::check_storable`).
//!
//! Model files are JSON, which has no infinity and no NaN: `serde_json`
//! writes a non-finite float as `null`, and the model then never loads
//! again (issue 26). [`first_non_finite`] walks any `Serialize` value the
//! way a serializer does and reports the path of the first float that is not
//! finite, whatever the learner and however deep (an `Option<f64>` or a float
//! in a map included), so no learner has to list its own numbers.

use std::fmt;

use serde::ser::{self, Serialize};

/// The path (`shapes[3].values[7]`) of the first non-finite float in
/// `value`, or `None` if every float is finite.
pub fn first_non_finite<T: Serialize + ?Sized>(value: &T) -> Option<String> {
    let mut walk = Walk { path: Vec::new() };
    match value.serialize(&mut walk) {
        Ok(()) => None,
        Err(Found(path)) => Some(if path.is_empty() {
            "(the value itself)".into()
        } else {
            path
        }),
    }
}

/// The path of the first non-finite float found (the walk's "error").
#[derive(Debug)]
struct Found(String);

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "non-finite number at {}", self.0)
    }
}

impl std::error::Error for Found {}

impl ser::Error for Found {
    fn custom<M: fmt::Display>(message: M) -> Found {
        // A value that cannot serialise at all cannot be stored either.
        Found(format!("(unserialisable: {message})"))
    }
}

/// A serializer that writes nothing: it only keeps the path it is at.
struct Walk {
    path: Vec<String>,
}

impl Walk {
    fn here(&self) -> String {
        let mut out = String::new();
        for part in &self.path {
            if !part.starts_with('[') && !out.is_empty() {
                out.push('.');
            }
            out.push_str(part);
        }
        out
    }

    fn float(&self, x: f64) -> Result<(), Found> {
        if x.is_finite() {
            Ok(())
        } else {
            Err(Found(self.here()))
        }
    }

    fn nested<T: Serialize + ?Sized>(&mut self, part: String, value: &T) -> Result<(), Found> {
        self.path.push(part);
        let out = value.serialize(&mut *self);
        self.path.pop();
        out
    }
}

/// Sequences, tuples, maps and structs: each element under its index or key.
struct Compound<'a> {
    walk: &'a mut Walk,
    index: usize,
    key: Option<String>,
}

impl Compound<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Found> {
        let part = format!("[{}]", self.index);
        self.index += 1;
        self.walk.nested(part, value)
    }
}

macro_rules! ok_scalars {
    ($($method:ident: $ty:ty),* $(,)?) => {
        $(fn $method(self, _: $ty) -> Result<(), Found> { Ok(()) })*
    };
}

impl<'a> ser::Serializer for &'a mut Walk {
    type Ok = ();
    type Error = Found;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    ok_scalars!(
        serialize_bool: bool,
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_i128: i128,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64,
        serialize_u128: u128,
        serialize_char: char,
        serialize_str: &str,
        serialize_bytes: &[u8],
    );

    fn serialize_f32(self, v: f32) -> Result<(), Found> {
        self.float(f64::from(v))
    }

    fn serialize_f64(self, v: f64) -> Result<(), Found> {
        self.float(v)
    }

    fn serialize_none(self) -> Result<(), Found> {
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Found> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Found> {
        Ok(())
    }

    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Found> {
        Ok(())
    }

    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), Found> {
        Ok(())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Found> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Found> {
        self.nested(variant.to_owned(), value)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'a>, Found> {
        Ok(Compound {
            walk: self,
            index: 0,
            key: None,
        })
    }

    fn serialize_tuple(self, len: usize) -> Result<Compound<'a>, Found> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Compound<'a>, Found> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        len: usize,
    ) -> Result<Compound<'a>, Found> {
        self.serialize_seq(Some(len))
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'a>, Found> {
        self.serialize_seq(None)
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Compound<'a>, Found> {
        self.serialize_seq(None)
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, Found> {
        self.serialize_seq(None)
    }
}

impl ser::SerializeSeq for Compound<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Found> {
        self.element(value)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

impl ser::SerializeTuple for Compound<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Found> {
        self.element(value)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

impl ser::SerializeTupleStruct for Compound<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Found> {
        self.element(value)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

impl ser::SerializeTupleVariant for Compound<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Found> {
        self.element(value)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Found> {
        // A float key is checked like any float; a string key names the path.
        key.serialize(&mut *self.walk)?;
        self.key = Some(
            serde_json::to_value(key)
                .ok()
                .and_then(|k| k.as_str().map(str::to_owned))
                .unwrap_or_else(|| format!("{{key {}}}", self.index)),
        );
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Found> {
        let part = self
            .key
            .take()
            .unwrap_or_else(|| format!("[{}]", self.index));
        self.index += 1;
        self.walk.nested(part, value)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        name: &'static str,
        value: &T,
    ) -> Result<(), Found> {
        self.walk.nested(name.to_owned(), value)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        name: &'static str,
        value: &T,
    ) -> Result<(), Found> {
        self.walk.nested(name.to_owned(), value)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[derive(serde::Serialize)]
    struct Shape {
        feature: String,
        values: Vec<f64>,
        clip: Option<f32>,
    }

    #[derive(serde::Serialize)]
    enum Body {
        Shapes { intercept: f64, shapes: Vec<Shape> },
    }

    fn body(values: Vec<f64>, clip: Option<f32>, intercept: f64) -> Body {
        Body::Shapes {
            intercept,
            shapes: vec![
                Shape {
                    feature: "a".into(),
                    values: vec![0.5, -1.0],
                    clip: None,
                },
                Shape {
                    feature: "b".into(),
                    values,
                    clip,
                },
            ],
        }
    }

    #[test]
    fn finds_the_first_non_finite_number_by_its_path() {
        assert_eq!(
            first_non_finite(&body(vec![1.0, 2.0], Some(3.0), 0.0)),
            None
        );
        assert_eq!(
            first_non_finite(&body(vec![1.0, f64::INFINITY], None, 0.0)).as_deref(),
            Some("shapes[1].values[1]")
        );
        assert_eq!(
            first_non_finite(&body(vec![1.0], Some(f32::NAN), 0.0)).as_deref(),
            Some("shapes[1].clip")
        );
        assert_eq!(
            first_non_finite(&body(vec![], None, f64::NEG_INFINITY)).as_deref(),
            Some("intercept")
        );
        let mut map = BTreeMap::new();
        map.insert("w".to_owned(), vec![1.0, f64::NAN]);
        assert_eq!(first_non_finite(&map).as_deref(), Some("w[1]"));
        assert_eq!(
            first_non_finite(&f64::NAN).as_deref(),
            Some("(the value itself)")
        );
        assert_eq!(
            first_non_finite(&serde_json::json!({"a": [1.0, null]})),
            None
        );
    }
}
