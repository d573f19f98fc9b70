//! Properties of `answer::parse_json`: valid JSON parses unchanged, and the
//! wrappings models add around an object or array do not change the result.

use mnemo_llm::answer::parse_json;
use proptest::prelude::*;
use serde_json::Value;

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1.0e9f64..1.0e9).prop_map(Value::from),
        // Strings full of the characters the repairs look at.
        "[a-z{}\\[\\],\" :<>/\\\\`\u{e9}\u{1f600}]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::btree_map("[a-z{}\\[\\],\" ]{0,6}", inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn container() -> impl Strategy<Value = Value> {
    json_value().prop_filter("object or array", |v| v.is_object() || v.is_array())
}

proptest! {
    #[test]
    fn valid_json_parses_unchanged(value in json_value(), pretty in any::<bool>()) {
        let text = if pretty {
            serde_json::to_string_pretty(&value).unwrap()
        } else {
            serde_json::to_string(&value).unwrap()
        };
        let expected: Value = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(parse_json(&text).unwrap(), expected);
    }

    #[test]
    fn wrapped_containers_parse_to_the_same_value(
        value in container(),
        pretty in any::<bool>(),
        wrapping in 0usize..5,
    ) {
        let json = if pretty {
            serde_json::to_string_pretty(&value).unwrap()
        } else {
            serde_json::to_string(&value).unwrap()
        };
        let expected: Value = serde_json::from_str(&json).unwrap();
        let text = match wrapping {
            0 => format!("```json\n{json}\n```"),
            1 => format!("Here is the result:\n{json}\nHope this helps!"),
            2 => format!("\u{feff}<think>Let me think about {{this}}.</think>\n{json}"),
            3 => format!("```\n{json}\n```\nAnything else?"),
            _ => format!("Sure. {json}"),
        };
        prop_assert_eq!(parse_json(&text).unwrap(), expected);
    }
}
