// serde's derive writes this program's (de)serializers: what the proc-macro, compiled
// by kiln and loaded by rustc, produced shows in what the program prints.
use serde::de::value::{Error, MapDeserializer};
use serde::ser::{Serialize, SerializeStruct, Serializer};
use serde::Deserialize;

#[derive(serde::Serialize, Deserialize, Debug, PartialEq)]
struct Point {
    x: i32,
    y: i32,
    #[serde(default)]
    label: String,
}

#[derive(serde::Serialize, Deserialize, Debug)]
#[serde(rename_all = "snake_case")]
enum Shape {
    Circle { r: u32 },
    Square(u32),
    Empty,
}

// A serializer that writes what it is given as text, field by field.
struct Text(String);
impl<'a> Serializer for &'a mut Text {
    type Ok = ();
    type Error = std::fmt::Error;
    type SerializeSeq = serde::ser::Impossible<(), std::fmt::Error>;
    type SerializeTuple = serde::ser::Impossible<(), std::fmt::Error>;
    type SerializeTupleStruct = serde::ser::Impossible<(), std::fmt::Error>;
    type SerializeTupleVariant = serde::ser::Impossible<(), std::fmt::Error>;
    type SerializeMap = serde::ser::Impossible<(), std::fmt::Error>;
    type SerializeStruct = Self;
    type SerializeStructVariant = serde::ser::Impossible<(), std::fmt::Error>;
    fn serialize_bool(self, v: bool) -> Result<(), Self::Error> { self.0 += &v.to_string(); Ok(()) }
    fn serialize_i8(self, v: i8) -> Result<(), Self::Error> { self.serialize_i64(v.into()) }
    fn serialize_i16(self, v: i16) -> Result<(), Self::Error> { self.serialize_i64(v.into()) }
    fn serialize_i32(self, v: i32) -> Result<(), Self::Error> { self.serialize_i64(v.into()) }
    fn serialize_i64(self, v: i64) -> Result<(), Self::Error> { self.0 += &v.to_string(); Ok(()) }
    fn serialize_u8(self, v: u8) -> Result<(), Self::Error> { self.serialize_u64(v.into()) }
    fn serialize_u16(self, v: u16) -> Result<(), Self::Error> { self.serialize_u64(v.into()) }
    fn serialize_u32(self, v: u32) -> Result<(), Self::Error> { self.serialize_u64(v.into()) }
    fn serialize_u64(self, v: u64) -> Result<(), Self::Error> { self.0 += &v.to_string(); Ok(()) }
    fn serialize_f32(self, v: f32) -> Result<(), Self::Error> { self.serialize_f64(v.into()) }
    fn serialize_f64(self, v: f64) -> Result<(), Self::Error> { self.0 += &v.to_string(); Ok(()) }
    fn serialize_char(self, v: char) -> Result<(), Self::Error> { self.0.push(v); Ok(()) }
    fn serialize_str(self, v: &str) -> Result<(), Self::Error> { self.0 += &format!("{:?}", v); Ok(()) }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), Self::Error> { Err(std::fmt::Error) }
    fn serialize_none(self) -> Result<(), Self::Error> { self.0 += "none"; Ok(()) }
    fn serialize_some<T: ?Sized + Serialize>(self, v: &T) -> Result<(), Self::Error> { v.serialize(self) }
    fn serialize_unit(self) -> Result<(), Self::Error> { self.0 += "()"; Ok(()) }
    fn serialize_unit_struct(self, name: &'static str) -> Result<(), Self::Error> { self.0 += name; Ok(()) }
    fn serialize_unit_variant(self, _: &'static str, i: u32, v: &'static str) -> Result<(), Self::Error> {
        self.0 += &format!("{}#{}", v, i);
        Ok(())
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _: &'static str, v: &T) -> Result<(), Self::Error> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self, _: &'static str, i: u32, name: &'static str, v: &T,
    ) -> Result<(), Self::Error> {
        self.0 += &format!("{}#{}(", name, i);
        v.serialize(&mut *self)?;
        self.0 += ")";
        Ok(())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Self::Error> { Err(std::fmt::Error) }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Self::Error> { Err(std::fmt::Error) }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, Self::Error> {
        Err(std::fmt::Error)
    }
    fn serialize_tuple_variant(
        self, _: &'static str, _: u32, _: &'static str, _: usize,
    ) -> Result<Self::SerializeTupleVariant, Self::Error> {
        Err(std::fmt::Error)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Self::Error> { Err(std::fmt::Error) }
    fn serialize_struct(self, name: &'static str, n: usize) -> Result<Self, Self::Error> {
        self.0 += &format!("{}[{}]{{", name, n);
        Ok(self)
    }
    fn serialize_struct_variant(
        self, _: &'static str, _: u32, _: &'static str, _: usize,
    ) -> Result<Self::SerializeStructVariant, Self::Error> {
        Err(std::fmt::Error)
    }
}
impl<'a> SerializeStruct for &'a mut Text {
    type Ok = ();
    type Error = std::fmt::Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, key: &'static str, v: &T) -> Result<(), Self::Error> {
        self.0 += key;
        self.0 += "=";
        v.serialize(&mut **self)?;
        self.0 += " ";
        Ok(())
    }
    fn end(self) -> Result<(), Self::Error> { self.0 += "}"; Ok(()) }
}

fn text<T: Serialize>(v: &T) -> String {
    let mut t = Text(String::new());
    match v.serialize(&mut t) {
        Ok(()) => t.0,
        Err(_) => format!("{} (not serializable as text)", t.0),
    }
}

fn main() {
    let read = |entries: Vec<(&'static str, i32)>| Point::deserialize(MapDeserializer::<_, Error>::new(entries.into_iter()));
    let p = read(vec![("x", 3), ("y", -4)]).unwrap();
    println!("{:?} -> {}", p, text(&p));
    println!("missing field: {}", read(vec![("x", 1)]).unwrap_err());
    println!("unknown field ignored: {:?}", read(vec![("x", 1), ("y", 2), ("z", 9)]).unwrap());
    for s in [Shape::Circle { r: 2 }, Shape::Square(5), Shape::Empty] {
        println!("{:?} -> {}", s, text(&s));
    }
}
