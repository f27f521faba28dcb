//! Enums whose names in JSON, CSV, tables and messages come from one table ([`named_enum!`]), so that
//! code compares variants where it compared strings and the files stay byte-identical.

/// Declare an enum with one name per variant. The name table is strum's (`IntoStaticStr`, `VariantArray`
/// derived with each variant's `serialize` name); on top it generates `ALL`, `name()`, `from_name()`, `FromStr` and
/// `Display` (through the storage crate's `name_traits!`, as every name-table enum has them) and serde as
/// the name. With `else Variant`, a name this syncbench does not know reads from JSON as that variant (a
/// newer syncbench's file stays readable); without it, such a name is an error naming the known ones.
///
/// ```text
/// named_enum! {
///     /// What a device is.
///     pub enum DeviceKind ("device kind") else Unknown {
///         /// A whole disk.
///         Disk = "disk",
///         /// Not recognised.
///         Unknown = "unknown",
///     }
/// }
/// ```
macro_rules! named_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident ($what:literal) $(else $fallback:ident)? {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::VariantArray)]
        $vis enum $name {
            $( $(#[$vmeta])* #[strum(serialize = $text)] $variant, )+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = <$name as strum::VariantArray>::VARIANTS;

            /// The name in JSON, CSV, tables and messages.
            pub fn name(self) -> &'static str {
                self.into()
            }

            /// The variant of a name, if it is one.
            pub fn from_name(text: &str) -> Option<$name> {
                Self::ALL.iter().copied().find(|v| v.name() == text)
            }

            /// The variant of a name as serde reads it (see the macro's `else`).
            fn read(text: &str) -> Result<$name, String> {
                $( if Self::from_name(text).is_none() { return Ok($name::$fallback); } )?
                Self::from_name(text).ok_or_else(|| {
                    let known: Vec<&str> = Self::ALL.iter().map(|v| v.name()).collect();
                    format!("unknown {} {text:?}; expected {}", $what, known.join(", "))
                })
            }
        }

        syncbench_engine::storage::name_traits!($name, $what);

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                Self::read(&text).map_err(serde::de::Error::custom)
            }
        }
    };
}

pub(crate) use named_enum;

#[cfg(test)]
mod tests {
    named_enum! {
        /// A strict one.
        enum Strict ("colour") {
            /// Red.
            Red = "red",
            /// Dark blue.
            DarkBlue = "dark blue",
        }
    }

    named_enum! {
        /// A tolerant one.
        enum Tolerant ("shape") else Unknown {
            /// Round.
            Round = "round",
            /// Anything else.
            Unknown = "unknown",
        }
    }

    #[test]
    fn names_round_trip_through_json_and_text() {
        for v in Strict::ALL {
            let json = serde_json::to_string(v).unwrap();
            assert_eq!(json, format!("\"{}\"", v.name()));
            assert_eq!(serde_json::from_str::<Strict>(&json).unwrap(), *v);
            assert_eq!(v.to_string().parse::<Strict>().unwrap(), *v);
        }
        assert_eq!(format!("[{:>9}]", Strict::Red), "[      red]");
    }

    #[test]
    fn an_unknown_name_is_an_error_or_the_fallback() {
        let err = serde_json::from_str::<Strict>("\"green\"").unwrap_err().to_string();
        assert!(err.contains("unknown colour \"green\"; expected red, dark blue"), "{err}");
        assert_eq!(serde_json::from_str::<Tolerant>("\"square\"").unwrap(), Tolerant::Unknown);
        assert_eq!("round".parse::<Tolerant>().unwrap(), Tolerant::Round);
        assert_eq!("square".parse::<Tolerant>().unwrap_err(), "unknown shape 'square'", "typed names are strict");
        assert!(serde_json::from_str::<Tolerant>("7").is_err());
    }
}
