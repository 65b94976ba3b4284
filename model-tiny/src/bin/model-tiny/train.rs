pub fn main(_a: &[String]) -> model_tiny::Result<()> {
    Err(model_tiny::Error::Usage("train: not yet".into()))
}
